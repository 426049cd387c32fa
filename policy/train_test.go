package policy

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"gbdmpc/gbd"
)

func fixedClock() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func TestTrainDeterministic(t *testing.T) {
	ds := synthTask(rand.New(rand.NewPCG(10, 1)), synthesisYpb(t), 12, 15)
	for _, variant := range []Variant{Proposed, Independent} {
		cfg := TrainConfig{Variant: variant, Seed: 42, Stage1: StageConfig{Epochs: 2}, Stage2: StageConfig{Epochs: 2}, Now: fixedClock}
		train := func(workers int) *Agent {
			c := cfg
			c.Workers = workers
			a, err := Train(context.Background(), ds, c)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		a, b, c := train(2), train(2), train(1)
		for i := range a.net.p {
			if math.Float64bits(a.net.p[i]) != math.Float64bits(b.net.p[i]) {
				t.Fatalf("%s: two runs with 2 workers differ at weight %d: %v vs %v", variant, i, a.net.p[i], b.net.p[i])
			}
			if math.Float64bits(a.net.p[i]) != math.Float64bits(c.net.p[i]) {
				t.Fatalf("%s: 2 workers and 1 worker differ at weight %d: %v vs %v", variant, i, a.net.p[i], c.net.p[i])
			}
		}
		if a.Version() != b.Version() {
			t.Errorf("%s: same weights, versions %s and %s", variant, a.Version(), b.Version())
		}
		d, err := Train(context.Background(), ds, TrainConfig{Variant: variant, Seed: 43, Stage1: cfg.Stage1, Stage2: cfg.Stage2, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if d.Version() == a.Version() {
			t.Errorf("%s: another seed gave the same version %s", variant, d.Version())
		}
	}
}

// TestFineTuneMatchesTrain checks that Train(Proposed) is stage 1 followed by FineTune, so a caller
// can produce the baseline and the proposed agent from one stage-1 run.
func TestFineTuneMatchesTrain(t *testing.T) {
	ds := synthTask(rand.New(rand.NewPCG(11, 1)), synthesisYpb(t), 8, 10)
	cfg := TrainConfig{Seed: 7, Stage1: StageConfig{Epochs: 2}, Stage2: StageConfig{Epochs: 3}, Workers: 2}
	direct, err := Train(context.Background(), ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg
	c.Variant = Baseline
	base, err := Train(context.Background(), ds, c)
	if err != nil {
		t.Fatal(err)
	}
	baseVersion := base.Version()
	tuned, err := FineTune(context.Background(), base, ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tuned.Version() != direct.Version() || tuned.Variant() != Proposed {
		t.Errorf("fine-tuned %s (%s), trained directly %s", tuned.Version(), tuned.Variant(), direct.Version())
	}
	if base.Version() != baseVersion || base.Variant() != Baseline {
		t.Error("FineTune modified its base agent")
	}
	// Stage 2 leaves the graph layers exactly as stage 1 left them.
	for k := 0; k < base.net.lay.head; k++ {
		if base.net.p[k] != tuned.net.p[k] {
			t.Fatalf("graph parameter %d changed in stage 2", k)
		}
	}
	m := tuned.Meta()
	if m.Stage1.Epochs != 2 || m.Stage2.Epochs != 3 || tuned.Omega() != 0.1 || m.TrainSamples != len(ds.Samples) || m.TrainSets != 8 {
		t.Errorf("metadata %+v", m)
	}
	// A fine-tune on other data records that data as stage 2's, and keeps stage 1's.
	half := *ds
	half.Samples = ds.Samples[:len(ds.Samples)/2]
	c2 := cfg
	c2.Seed = 9
	other, err := FineTune(context.Background(), base, &half, c2)
	if err != nil {
		t.Fatal(err)
	}
	if m := other.Meta(); m.Stage2Samples != len(half.Samples) || m.Stage2Seed != 9 || m.TrainSamples != len(ds.Samples) || m.Seed != 7 {
		t.Errorf("fine-tune on half the data: metadata %+v", m)
	}
}

func TestTrainProgressAndCancel(t *testing.T) {
	ds := synthTask(rand.New(rand.NewPCG(12, 1)), synthesisYpb(t), 4, 10)
	var got []EpochMetrics
	_, err := Train(context.Background(), ds, TrainConfig{Seed: 1, Stage1: StageConfig{Epochs: 2}, Stage2: StageConfig{Epochs: 1},
		Progress: func(m EpochMetrics) { got = append(got, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Stage != 1 || got[1].Epoch != 2 || got[2].Stage != 2 || got[2].Epochs != 1 {
		t.Errorf("progress %+v", got)
	}
	for _, m := range got {
		if !(m.Loss > 0) || m.Accuracy < 0 || m.Accuracy > 1 || m.Feasible < 0 || m.Feasible > 1 {
			t.Errorf("implausible metrics %+v", m)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Train(ctx, ds, TrainConfig{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestTrainRejects(t *testing.T) {
	ypb := synthesisYpb(t)
	ds := synthTask(rand.New(rand.NewPCG(13, 1)), ypb, 2, 5)
	for name, tc := range map[string]struct {
		ds  *Dataset
		cfg TrainConfig
	}{
		"variant":  {ds, TrainConfig{Variant: "greedy"}},
		"lr":       {ds, TrainConfig{Stage1: StageConfig{LR: -1}}},
		"arch":     {ds, TrainConfig{Arch: Arch{ECC: []int{0}}}},
		"empty":    {&Dataset{Family: "x", Ypb: ypb}, TrainConfig{}},
		"no Y_pb":  {&Dataset{Family: "x", Samples: ds.Samples}, TrainConfig{}},
		"bad data": {&Dataset{Family: "x", Ypb: ypb, Samples: []Sample{{Prev: []float64{0}}}}, TrainConfig{}},
	} {
		if _, err := Train(context.Background(), tc.ds, tc.cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ind, err := Train(context.Background(), ds, TrainConfig{Variant: Independent, Stage1: StageConfig{Epochs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FineTune(context.Background(), ind, ds, TrainConfig{}); err == nil {
		t.Error("fine-tuning the independent agent accepted")
	}
}

// randomPolicy is the exact expectation of a policy that picks uniformly from Y_pb: exact match
// 1/|Y_pb| on every sample, and on a sample with feasibility cuts the fraction of Y_pb satisfying them.
func randomPolicy(ds *Dataset) (exact, feas float64) {
	n := ds.Ypb.Count()
	var nf int
	y := make([]float64, ds.Ypb.NY)
	for i := range ds.Samples {
		s := &ds.Samples[i]
		if !hasFeasibilityCut(s.Cuts) {
			continue
		}
		nf++
		ok := 0
		for j := 0; j < n; j++ {
			if gbd.SatisfiesFeasibilityCuts(s.Cuts, ds.Ypb.Float(j, y)) {
				ok++
			}
		}
		feas += float64(ok) / float64(n)
	}
	return 100 / float64(n), 100 * feas / float64(nf)
}

// TestLearnSynthetic trains the three variants of the paper with the default preset (and the
// proposed agent with the paper's own network) on the synthetic master-problem task and compares
// them on held-out parameter sets with a uniformly random choice from Y_pb, whose expected scores
// are computed exactly.
func TestLearnSynthetic(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four networks")
	}
	ypb := synthesisYpb(t)
	ds := synthTask(rand.New(rand.NewPCG(20, 1)), ypb, 60, 40)
	train, test, err := SplitBySet(ds, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	randExact, randFeas := randomPolicy(test)
	ctx := context.Background()
	cfg := TrainConfig{Seed: 3, Stage1: StageConfig{Epochs: 10}, Stage2: StageConfig{Epochs: 10}, Now: fixedClock}
	Presets[DefaultPreset].Apply(&cfg)
	start := time.Now()
	c := cfg
	c.Variant = Baseline
	base, err := Train(ctx, train, c)
	if err != nil {
		t.Fatal(err)
	}
	prop, err := FineTune(ctx, base, train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Variant = Independent
	ind, err := Train(ctx, train, c)
	if err != nil {
		t.Fatal(err)
	}
	c = cfg
	Presets["paper"].Apply(&c)
	propPaper, err := Train(ctx, train, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d train / %d test samples (%d with feasibility cuts); training took %v",
		len(train.Samples), len(test.Samples), mustEval(t, base, test).WithFeasCuts, time.Since(start))
	mb, mp, mi, mx := mustEval(t, base, test), mustEval(t, prop, test), mustEval(t, ind, test), mustEval(t, propPaper, test)
	t.Logf("random (expected)     exact match %.2f%%, feasibility %.2f%%", randExact, randFeas)
	t.Logf("baseline              %v", mb)
	t.Logf("proposed (raw)        %v", mp)
	t.Logf("proposed, adjusted    %v", mustEvalAs(t, prop, test, Adjusted))
	t.Logf("baseline, adjusted    %v", mustEvalAs(t, base, test, Adjusted))
	t.Logf("independent           %v; undecided %d, outside Y_pb %d", mi, mi.Undecided, mi.OutsideYpb)
	t.Logf("proposed, paper net   %v", mx)
	if mp.ExactMatchPct < 3*randExact {
		t.Errorf("proposed exact match %.2f%% is not clearly above random %.2f%%", mp.ExactMatchPct, randExact)
	}
	if mp.FeasiblePct < randFeas+10 {
		t.Errorf("proposed feasibility %.2f%% is not clearly above random %.2f%%", mp.FeasiblePct, randFeas)
	}
	if mp.FeasiblePct < mb.FeasiblePct-2 {
		t.Errorf("stage 2 lowered feasibility: proposed %.2f%%, baseline %.2f%%", mp.FeasiblePct, mb.FeasiblePct)
	}
	if mp.ExactMatchPct < 5*randExact || mp.FeasiblePct < 90 {
		t.Errorf("with the default preset the proposed agent should nearly solve the task: %v", mp)
	}
	// The paper's network, permutation-invariant over the binaries, learns the task more slowly:
	// above random on exact match, not yet on feasibility (Table I's ablation in docs/experiments.md).
	if mx.ExactMatchPct < 3*randExact {
		t.Errorf("paper network: exact match %.2f%% is not clearly above random %.2f%%", mx.ExactMatchPct, randExact)
	}
}

func mustEval(t *testing.T, a *Agent, ds *Dataset) Metrics {
	t.Helper()
	return mustEvalAs(t, a, ds, a.Inference())
}

func mustEvalAs(t *testing.T, a *Agent, ds *Dataset, infer Inference) Metrics {
	t.Helper()
	m, err := EvaluateAs(a, ds, infer)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// BenchmarkTrainEpoch is one stage-1 epoch (batch 8, the paper's architecture) over about 2,000
// synthetic samples, using every available core.
func BenchmarkTrainEpoch(b *testing.B) {
	ypb := synthesisYpb(b)
	ds := synthTask(rand.New(rand.NewPCG(30, 1)), ypb, 50, 40)
	for b.Loop() {
		if _, err := Train(context.Background(), ds, TrainConfig{Variant: Baseline, Stage1: StageConfig{Epochs: 1}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ds.Samples)), "samples")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(ds.Samples)), "µs/sample")
}

// TestContinue: continuing Algorithm 1 from a weak base (one epoch of each stage) keeps the base's
// variant, architecture and normalisation, leaves the base alone, trains the graph layers too,
// and ends well above the base and above fine-tuning the same base for as many epochs, which can
// only move the head.
func TestContinue(t *testing.T) {
	ypb := synthesisYpb(t)
	ds := synthTask(rand.New(rand.NewPCG(20, 1)), ypb, 40, 30)
	train, test, err := SplitBySet(ds, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	weak := TrainConfig{Seed: 3, Arch: Arch{VarIndex: true}, Stage1: StageConfig{Epochs: 1}, Stage2: StageConfig{Epochs: 1}, Now: fixedClock}
	base, err := Train(ctx, train, weak)
	if err != nil {
		t.Fatal(err)
	}
	baseVersion, baseNorm := base.Version(), base.norm
	more := TrainConfig{Seed: 4, Stage1: StageConfig{Epochs: 6}, Stage2: StageConfig{Epochs: 6}, Now: fixedClock}
	cont, err := Continue(ctx, base, train, more)
	if err != nil {
		t.Fatal(err)
	}
	ft := more
	ft.Stage2.Epochs = 12 // the same number of epochs, all on the head
	tuned, err := FineTune(ctx, base, train, ft)
	if err != nil {
		t.Fatal(err)
	}
	if base.Version() != baseVersion {
		t.Error("Continue modified its base")
	}
	if cont.Variant() != Proposed || !cont.Arch().VarIndex || cont.Omega() != base.Omega() {
		t.Errorf("continued agent: variant %s, arch %+v, ω %v", cont.Variant(), cont.Arch(), cont.Omega())
	}
	if !reflect.DeepEqual(cont.norm, baseNorm) {
		t.Error("Continue refitted the normalisation the graph layers were trained on")
	}
	changed := false
	for k := 0; k < base.net.lay.head; k++ {
		changed = changed || base.net.p[k] != cont.net.p[k]
	}
	if !changed {
		t.Error("Continue left the graph layers as they were")
	}
	if m := cont.Meta(); m.Stage1.Epochs != 6 || m.Stage2.Epochs != 6 || m.Seed != 4 || m.TrainSamples != len(train.Samples) {
		t.Errorf("metadata %+v", m)
	}
	mb, mc, mf := mustEval(t, base, test), mustEval(t, cont, test), mustEval(t, tuned, test)
	t.Logf("weak base  %v", mb)
	t.Logf("continued  %v", mc)
	t.Logf("fine-tuned %v", mf)
	if mc.ExactMatchPct < mb.ExactMatchPct+10 {
		t.Errorf("continuing did not improve the weak base clearly: %.2f%% → %.2f%%", mb.ExactMatchPct, mc.ExactMatchPct)
	}
	if mc.ExactMatchPct < mf.ExactMatchPct {
		t.Errorf("continuing (%.2f%%) below fine-tuning the head only (%.2f%%)", mc.ExactMatchPct, mf.ExactMatchPct)
	}

	// A base of another family or Y_pb is refused.
	other := *train
	other.Family = "other"
	if _, err := Continue(ctx, base, &other, more); err == nil {
		t.Error("a dataset of another family was accepted")
	}
}

// TestAdamWeightDecay: with zero gradients AdamW only shrinks, by 1 − lr·decay a step; without
// decay nothing moves.
func TestAdamWeightDecay(t *testing.T) {
	p := []float64{1, -2, 0.5}
	o := newAdam(0.01, len(p))
	o.decay = 0.1
	g := make([]float64, len(p))
	for range 10 {
		o.step(p, g)
	}
	f := math.Pow(1-0.01*0.1, 10)
	for i, want := range []float64{f, -2 * f, 0.5 * f} {
		if math.Abs(p[i]-want) > 1e-15 {
			t.Errorf("p[%d] = %v, want %v", i, p[i], want)
		}
	}
	q := []float64{1, -2}
	newAdam(0.01, 2).step(q, []float64{0, 0})
	if q[0] != 1 || q[1] != -2 {
		t.Errorf("plain Adam moved weights with zero gradients: %v", q)
	}
}
