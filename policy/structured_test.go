package policy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/plant/pumpstation"
)

// pumpSpace is the action space of the pump station of n binaries (pumpstation.SizedConfig) both
// enumerated (up to 20 binaries; nil beyond) and implicit with its stages, so that the structured
// agent's answers can be checked against enumeration.
func pumpSpace(t testing.TB, n int) (enum, imp *gbd.Admissible) {
	t.Helper()
	c, err := pumpstation.SizedConfig(n)
	if err != nil {
		t.Fatal(err)
	}
	rows := pumpstation.PureRows(&c)
	if n <= 20 {
		if enum, err = gbd.EnumerateAdmissible(n, rows, 0); err != nil {
			t.Fatal(err)
		}
	}
	if imp, err = gbd.ImplicitAdmissible(n, rows); err != nil {
		t.Fatal(err)
	}
	imp.Stages = pumpstation.Stages(&c)
	return enum, imp
}

// implicitTask is synthTask over the pump station's space, its labels written as assignments of the
// implicit set (what replay makes for a station too large to enumerate).
func implicitTask(t testing.TB, seed uint64, sets, perSet int) (*Dataset, *gbd.Admissible) {
	enum, imp := pumpSpace(t, 12)
	ds := synthTask(rand.New(rand.NewPCG(seed, 1)), enum, sets, perSet)
	ds.Ypb = imp
	for i := range ds.Samples {
		s := &ds.Samples[i]
		s.Y, s.Label = slices.Clone(enum.At(s.Label)), -1
	}
	if err := ds.Validate(); err != nil {
		t.Fatal(err)
	}
	return ds, enum
}

// The structured agent over an implicit Y_pb: it trains (both stages) on assignment labels, every
// proposal is an admissible assignment that the feasibility cuts allow, it learns (held-out
// objective of its decisions well above an untrained network's), and it and its dataset survive a
// round trip through their files.
func TestStructuredAgent(t *testing.T) {
	train, enum := implicitTask(t, 3, 40, 6)
	held, _ := implicitTask(t, 4, 12, 6)
	cfg := TrainConfig{Variant: Structured, Arch: Arch{ECC: []int{16, 16}, Dense: []int{32}, VarIndex: true},
		Stage1: StageConfig{Epochs: 25}, Stage2: StageConfig{Epochs: 5}, Seed: 5, Now: fixedClock}
	a, err := Train(context.Background(), train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Variant() != Structured || a.Meta().Stage2.Epochs != 5 {
		t.Fatalf("trained %s with stage 2 %+v, want structured with 5 stage-2 epochs", a.Variant(), a.Meta().Stage2)
	}
	untrained := cfg
	untrained.Stage1.Epochs, untrained.Stage1.LR, untrained.Stage2.Epochs, untrained.Stage2.LR = 1, 1e-12, 1, 1e-12
	u, err := Train(context.Background(), train, untrained)
	if err != nil {
		t.Fatal(err)
	}
	for _, ag := range []*Agent{a, u} {
		for i := range held.Samples {
			s := &held.Samples[i]
			p, err := ag.Propose(&gbd.MasterView{Cuts: s.Cuts, Prev: s.Prev, Ypb: held.Ypb})
			if err != nil {
				t.Fatal(err)
			}
			if p.Assign == nil || p.Logits != nil || p.Probs != nil || enum.Index(p.Assign) < 0 || !gbd.SatisfiesFeasibilityCuts(s.Cuts, p.Assign) {
				t.Fatalf("sample %d: proposal %v is not an admissible assignment the cuts allow", i, p.Assign)
			}
		}
	}
	// Screening candidates never proposes an assignment the optimality cuts value more than the
	// best-scored one.
	better := 0
	for i := range held.Samples {
		s := &held.Samples[i]
		p1, err1 := a.Propose(&gbd.MasterView{Cuts: s.Cuts, Prev: s.Prev, Ypb: held.Ypb})
		mu1 := gbd.MaxOptimality(s.Cuts, p1.Assign)
		p8, err8 := a.Propose(&gbd.MasterView{Cuts: s.Cuts, Prev: s.Prev, Ypb: held.Ypb, Candidates: 8})
		if err1 != nil || err8 != nil || enum.Index(p8.Assign) < 0 || !gbd.SatisfiesFeasibilityCuts(s.Cuts, p8.Assign) {
			t.Fatalf("sample %d: %v, %v; screened proposal %v", i, err1, err8, p8.Assign)
		}
		switch mu8 := gbd.MaxOptimality(s.Cuts, p8.Assign); {
		case mu8 > mu1+1e-9*(1+math.Abs(mu1)):
			t.Fatalf("sample %d: 8 candidates propose μ %v, the best-scored alone %v", i, mu8, mu1)
		case mu8 < mu1:
			better++
		}
	}
	t.Logf("8 candidates improved μ on %d of %d held-out masters", better, len(held.Samples))
	m, um := mustEval(t, a, held), mustEval(t, u, held)
	t.Logf("held out: trained %v; untrained %v", m, um)
	if m.Errors != 0 || m.Feasible != m.WithFeasCuts || m.AnyOptimal < um.AnyOptimal+m.Samples/10 {
		t.Fatalf("trained %v, untrained %v: want no errors, every decision feasible and 10 points more optimal decisions", m, um)
	}
	// μ_B regret: the expert is the master's optimum, so no proposal is below it; training brings the
	// proposals nearer, screening 8 candidates nearer still; and the mean is the one written out.
	var sum float64
	n := 0
	for i := range held.Samples {
		s := &held.Samples[i]
		p, _ := a.Propose(&gbd.MasterView{Cuts: s.Cuts, Prev: s.Prev, Ypb: held.Ypb})
		exp := gbd.Floats(make([]float64, held.Ypb.NY), s.Y)
		if mu := gbd.MaxOptimality(s.Cuts, exp); !math.IsInf(mu, 0) {
			sum += 100 * (gbd.MaxOptimality(s.Cuts, p.Assign) - mu) / math.Max(math.Abs(mu), 1)
			n++
		}
	}
	sm, err := EvaluateScreened(a, held, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("μ_B regret: trained %.2f%%, screened 8 %.2f%%, untrained %.2f%% (of %d)", m.MeanRegretPct, sm.MeanRegretPct, um.MeanRegretPct, m.Regretted)
	if n == 0 || m.Regretted != n || math.Abs(m.MeanRegretPct-sum/float64(n)) > 1e-9 {
		t.Errorf("regret %v%% over %d samples, computed here %v%% over %d", m.MeanRegretPct, m.Regretted, sum/float64(n), n)
	}
	if m.MeanRegretPct < 0 || sm.MeanRegretPct > m.MeanRegretPct || m.MeanRegretPct >= um.MeanRegretPct {
		t.Errorf("regret: trained %v, screened %v, untrained %v: want 0 ≤ screened ≤ trained < untrained", m.MeanRegretPct, sm.MeanRegretPct, um.MeanRegretPct)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "structured.policy")
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	b, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.Version() != a.Version() || b.Variant() != Structured || !b.ypb.Implicit() || b.CheckFits(held.Family, held.Ypb) != nil {
		t.Fatalf("loaded %s %s (implicit %v), want %s structured over the implicit set", b.Version(), b.Variant(), b.ypb.Implicit(), a.Version())
	}
	if err := b.CheckFits(held.Family, enum); err == nil {
		t.Fatal("a structured policy over the implicit set fits the enumerated one")
	}
	if bm := mustEval(t, b, held); bm != m {
		t.Fatalf("loaded policy scores %v, saved one %v", bm, m)
	}

	dpath := filepath.Join(dir, "held.jsonl.gz")
	if err := SaveDataset(dpath, held); err != nil {
		t.Fatal(err)
	}
	back, err := LoadDataset(dpath)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Ypb.Implicit() || back.Ypb.Signature != held.Ypb.Signature || !slices.EqualFunc(back.Ypb.Stages, held.Ypb.Stages, slices.Equal) || len(back.Samples) != len(held.Samples) {
		t.Fatal("the implicit dataset did not survive its file")
	}
	for i := range held.Samples {
		if !slices.Equal(back.Samples[i].Y, held.Samples[i].Y) || back.Samples[i].Label != -1 {
			t.Fatalf("sample %d: label %v/%d, want %v", i, back.Samples[i].Y, back.Samples[i].Label, held.Samples[i].Y)
		}
	}
}

// The other variants classify over an enumerated Y_pb and refuse an implicit one; the structured
// one needs the stages its decoder searches.
func TestStructuredAgentRefuses(t *testing.T) {
	train, _ := implicitTask(t, 3, 4, 3)
	for _, v := range []Variant{Proposed, Baseline, Independent} {
		if _, err := Train(context.Background(), train, TrainConfig{Variant: v, Stage1: StageConfig{Epochs: 1}, Stage2: StageConfig{Epochs: 1}}); err == nil {
			t.Errorf("%s trained over an implicit Y_pb", v)
		}
	}
	noStages, err := gbd.ImplicitAdmissible(12, train.Ypb.Rows)
	if err != nil {
		t.Fatal(err)
	}
	flat := *train
	flat.Ypb = noStages
	if _, err := Train(context.Background(), &flat, TrainConfig{Variant: Structured, Stage1: StageConfig{Epochs: 1}}); err == nil {
		t.Error("structured trained over a Y_pb without stages")
	}
	// A sample whose label is not in Y_pb, or an index label in an implicit set, is refused.
	bad := *train
	bad.Samples = slices.Clone(train.Samples)
	bad.Samples[0].Y = slices.Repeat([]uint8{1}, 12)
	if err := bad.Validate(); err == nil {
		t.Error("a label outside Y_pb validated")
	}
	bad.Samples[0].Y = nil
	if err := bad.Validate(); err == nil {
		t.Error("a sample without its assignment label validated")
	}
}

// In an implicit Y_pb the labeller's label is the staged master's optimum: the least largest
// optimality cut that the feasibility cuts allow, as enumeration finds it.
func TestLabellerImplicit(t *testing.T) {
	enum, imp := pumpSpace(t, 12)
	rng := rand.New(rand.NewPCG(9, 9))
	var lb Labeller
	y := make([]float64, 12)
	for solve := range 4 {
		cuts, _ := randomMaster(rng, 12, 12)
		for k := 1; k <= len(cuts); k++ {
			j, bits, ok := lb.Label(solve, cuts[:k], imp)
			best := math.Inf(1)
			for i := range enum.Count() {
				enum.Float(i, y)
				if gbd.SatisfiesFeasibilityCuts(cuts[:k], y) {
					best = math.Min(best, gbd.MaxOptimality(cuts[:k], y))
				}
			}
			if ok != !math.IsInf(best, 1) {
				t.Fatalf("solve %d, %d cuts: labelled %v, brute force optimum %v", solve, k, ok, best)
			}
			if !ok {
				break
			}
			for i, b := range bits {
				y[i] = float64(b)
			}
			if j != -1 || !imp.Contains(y) || !gbd.SatisfiesFeasibilityCuts(cuts[:k], y) || math.Abs(gbd.MaxOptimality(cuts[:k], y)-best) > 1e-9*(1+math.Abs(best)) {
				t.Fatalf("solve %d, %d cuts: label %v (index %d), want an optimum of value %v", solve, k, bits, j, best)
			}
		}
	}
}

// BenchmarkProposeLarge is one structured proposal (graph encoding, network, decoding) on a master
// of the 40-binary station with 400 cuts, a day's carried cuts, for the light and best presets.
func BenchmarkProposeLarge(b *testing.B) {
	_, imp := pumpSpace(b, 40)
	rng := rand.New(rand.NewPCG(1, 2))
	ds := &Dataset{Family: "pumpstation", Ypb: imp}
	var lb Labeller
	for i := range 2 {
		cuts, prev := randomMaster(rng, 40, 400)
		for k := range cuts {
			cuts[k].Kind = gbd.OptimalityCut
		}
		_, y, ok := lb.Label(i, cuts, imp)
		if !ok {
			b.Fatal("no label")
		}
		ds.Samples = append(ds.Samples, Sample{Cuts: cuts, Prev: prev, Label: -1, Y: y, Set: i})
	}
	for _, bc := range []struct {
		preset string
		k      int // MasterView.Candidates
	}{{"light", 0}, {"light", 64}, {"light", 512}, {"best", 0}} {
		b.Run(fmt.Sprintf("%s/candidates=%d", bc.preset, bc.k), func(b *testing.B) {
			cfg := TrainConfig{Variant: Structured, Stage1: StageConfig{Epochs: 1}, Stage2: StageConfig{Epochs: 1}, Now: fixedClock}
			Presets[bc.preset].Apply(&cfg)
			a, err := Train(context.Background(), ds, cfg)
			if err != nil {
				b.Fatal(err)
			}
			v := &gbd.MasterView{Cuts: ds.Samples[0].Cuts, Prev: ds.Samples[0].Prev, Ypb: imp, Candidates: bc.k}
			b.ResetTimer()
			for range b.N {
				if _, err := a.Propose(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Graphs encoded at each use (a dataset too large to keep encoded) train the same weights, bit for
// bit, as graphs encoded once, through both stages.
func TestTrainEncodesLazilyTheSame(t *testing.T) {
	train, _ := implicitTask(t, 3, 6, 4)
	cfg := TrainConfig{Variant: Structured, Arch: Arch{ECC: []int{4, 4}, Dense: []int{8}}, Stage1: StageConfig{Epochs: 2}, Stage2: StageConfig{Epochs: 2}, Seed: 2, Workers: 2, Now: fixedClock}
	kept, err := Train(context.Background(), train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := maxEncoded
	maxEncoded = 0
	defer func() { maxEncoded = old }()
	if gs := encodeAll(train.Samples, &kept.norm, &cfg.Arch); gs.all != nil {
		t.Fatal("graphs kept beyond the bound")
	}
	lazy, err := Train(context.Background(), train, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept.net.p, lazy.net.p) {
		t.Fatal("training on graphs encoded at each use gave other weights")
	}
}

// A structured agent over an enumerated Y_pb that has stages (the 24-binary station, under the
// enumeration cap) decodes over its rows and stages: its file keeps both, the loaded agent proposes
// what the saved one did, every proposal is in Y_pb, and rows that admit another set are refused.
func TestStructuredAgentOverAnEnumeratedSet(t *testing.T) {
	enum, imp := pumpSpace(t, 12)
	enum.Stages = imp.Stages
	ds := synthTask(rand.New(rand.NewPCG(9, 1)), enum, 8, 4)
	a, err := Train(context.Background(), ds, TrainConfig{Variant: Structured, Arch: Arch{ECC: []int{8}, Dense: []int{8}},
		Stage1: StageConfig{Epochs: 2}, Stage2: StageConfig{Epochs: 1}, Seed: 1, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "enum.gbdp")
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	b, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.Version() != a.Version() || b.ypb.Implicit() || b.ypb.Stages == nil || len(b.ypb.Rows) != len(enum.Rows) {
		t.Fatalf("loaded %s (implicit %v, %d stages, %d rows), want %s enumerated with its stages and %d rows",
			b.Version(), b.ypb.Implicit(), len(b.ypb.Stages), len(b.ypb.Rows), a.Version(), len(enum.Rows))
	}
	for i := range ds.Samples {
		s := &ds.Samples[i]
		v := &gbd.MasterView{Cuts: s.Cuts, Prev: s.Prev, Ypb: enum, Candidates: 4}
		pa, err := a.Propose(v)
		if err != nil {
			t.Fatal(err)
		}
		ya := slices.Clone(pa.Assign)
		pb, err := b.Propose(v)
		if err != nil {
			t.Fatal(err)
		}
		if enum.Index(ya) < 0 || !slices.Equal(ya, pb.Assign) {
			t.Fatalf("sample %d: saved agent proposes %v (in Y_pb: %v), loaded one %v", i, ya, enum.Index(ya) >= 0, pb.Assign)
		}
	}
	rec := ypbRecordOf(enum)
	rec.Pure[0].RHS++ // admits more than the listed assignments
	if _, err := rec.read(enum.NY, enum.Signature); err == nil || !strings.Contains(err.Error(), "do not admit exactly") {
		t.Fatalf("rows that admit another set: %v", err)
	}
}
