package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gbdmpc/mpc"
	"gbdmpc/policy"
	"gbdmpc/telemetry"
)

// smallArch keeps training in the tests to seconds. The one-hot binary index (not in the paper) lets
// a network trained on a few hundred masters tell the binaries apart.
var smallArch = policy.Arch{ECC: []int{32, 32}, Dense: []int{32}, VarIndex: true}

func families(name string) (mpc.Family, error) {
	if name != "synthesis" {
		return nil, fmt.Errorf("unknown family %q", name)
	}
	return synthesisFamily(), nil
}

// weakPolicy trains on the first n samples of the log for one epoch per stage: the policy a plant
// might run before there is much data. Its seed is one whose decisions are mostly infeasible: other
// seeds happen to settle on one assignment that most feasibility cuts allow, a policy that is weak on
// exact match but hard to beat on feasibility with the few hundred masters of a test log.
func weakPolicy(t *testing.T, dir string, n int, path string) *policy.Agent {
	t.Helper()
	d := read(t, Options{}, dir)
	ds := *d.Dataset
	ds.Samples = ds.Samples[:n]
	a, err := policy.Train(context.Background(), &ds, policy.TrainConfig{Arch: smallArch, Seed: 3,
		Stage1: policy.StageConfig{Epochs: 1}, Stage2: policy.StageConfig{Epochs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRetrainShadowAndGate is the offline loop end to end: a weak policy, a log, retraining on the
// log's older part, shadow evaluation on its latest part, and the gate in both directions.
func TestRetrainShadowAndGate(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three policies")
	}
	tmp := t.TempDir()
	logDir := filepath.Join(tmp, "log")
	writeLog(t, logDir, telemetry.LogOptions{MaxSegmentBytes: 64 << 10, Compress: true},
		logSpec{plant: "s1", family: synthesisFamily(), instances: synthesisInstances(21, 20, true), starts: 3})
	weak := filepath.Join(tmp, "weak.gbdp")
	weakPolicy(t, logDir, 20, weak)

	var log strings.Builder
	good := filepath.Join(tmp, "good.gbdp")
	cfg := Config{
		Logs: []string{logDir}, Families: families, OldPolicy: weak, Out: good, Holdout: 0.25,
		Retrain: RetrainConfig{FromScratch: true, Train: policy.TrainConfig{Seed: 7, // the base's architecture
			Stage1: policy.StageConfig{Epochs: 20}, Stage2: policy.StageConfig{Epochs: 20}}},
		ReportDir: filepath.Join(tmp, "report"), DatasetOut: filepath.Join(tmp, "replayed.jsonl.gz"), Log: &log,
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Log(log.String())
	sh := rep.Shadow
	if rep.Family != "synthesis" || rep.Training.Mode != ModeFromScratch || sh.Old == nil {
		t.Fatalf("report: family %q, mode %q, old %v", rep.Family, rep.Training.Mode, sh.Old)
	}
	if sh.Masters == 0 || sh.Rerun != rep.Split.HeldOutSolves || sh.Unreplayable != 0 {
		t.Fatalf("held out %d masters, re-ran %d of %d solves (%d unreplayable)", sh.Masters, sh.Rerun, rep.Split.HeldOutSolves, sh.Unreplayable)
	}
	if sh.New.Metrics.ExactMatch <= sh.Old.Metrics.ExactMatch {
		t.Errorf("exact match did not improve: old %s, new %s", sh.Old.Metrics, sh.New.Metrics)
	}
	for name, st := range map[string]RunStats{"classical": sh.Classical, "old": sh.Old.Rerun, "new": sh.New.Rerun} {
		if st.MatchClassical != sh.Rerun || st.Optimal != sh.Rerun || st.Failed != 0 {
			t.Errorf("%s re-runs: %+v", name, st)
		}
	}
	if sh.Classical.LoggedOptimal != sh.Rerun || sh.Classical.ReproducesLog != sh.Rerun {
		t.Errorf("classical re-runs reproduce %d of %d logged optima", sh.Classical.ReproducesLog, sh.Classical.LoggedOptimal)
	}
	if sh.New.Rerun.Proposed == 0 || sh.Old.Rerun.Proposed == 0 {
		t.Error("no proposals in the agents' re-runs")
	}
	if !rep.Gate.Pass || rep.Written != good {
		t.Fatalf("gate %+v, written %q", rep.Gate, rep.Written)
	}
	a, err := policy.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if a.Version() != rep.Training.NewVersion || a.Meta().HeldOut == nil || a.Meta().HeldOut.ExactMatch != sh.New.Metrics.ExactMatch {
		t.Errorf("written policy %s, held-out metadata %+v", a.Version(), a.Meta().HeldOut)
	}
	checkReportFiles(t, cfg.ReportDir, rep)
	ds, err := policy.LoadDataset(cfg.DatasetOut)
	if err != nil || len(ds.Samples) != rep.Replay.Masters {
		t.Errorf("dataset: %v, %d samples of %d", err, len(ds.Samples), rep.Replay.Masters)
	}
	t.Logf("exact match on the held-out slice: old %s → new %s; acceptance %.1f%% → %.1f%%",
		sh.Old.Metrics, sh.New.Metrics, 100*sh.Old.Rerun.Acceptance, 100*sh.New.Rerun.Acceptance)

	// The other way round: a policy barely trained replaces the good one only when forced.
	worse := filepath.Join(tmp, "worse.gbdp")
	cfg.OldPolicy, cfg.Out, cfg.ReportDir, cfg.DatasetOut, cfg.Log = good, worse, "", "", nil
	cfg.Shadow.MaxSolves = 4 // exact match decides these runs; a few re-runs keep the test short
	cfg.Retrain.Train.Stage1 = policy.StageConfig{Epochs: 1, LR: 1e-7}
	cfg.Retrain.Train.Stage2 = policy.StageConfig{Epochs: 1, LR: 1e-7}
	rep, err = Run(context.Background(), cfg)
	if !errors.Is(err, ErrRefused) || rep == nil || rep.Gate.Pass || rep.Written != "" {
		t.Fatalf("worse policy: err %v, report %+v", err, rep)
	}
	if _, err := os.Stat(worse); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused policy was written: %v", err)
	}
	cfg.Force = true
	rep, err = Run(context.Background(), cfg)
	if err != nil || rep.Written != worse || rep.Gate.Pass || !rep.Forced {
		t.Fatalf("forced: err %v, written %q, gate %+v", err, rep.Written, rep.Gate)
	}
	if _, err := os.Stat(worse); err != nil {
		t.Fatal(err)
	}

	// Fine-tuning the good policy (stage 2 on its frozen graph layers) is the default with a base.
	cfg.OldPolicy, cfg.Out, cfg.Force = good, "", false
	cfg.Retrain = RetrainConfig{Train: policy.TrainConfig{Seed: 7, Stage2: policy.StageConfig{Epochs: 3}}}
	rep, err = Run(context.Background(), cfg)
	if err != nil || rep.Training.Mode != ModeFineTune || rep.Written != "" {
		t.Fatalf("fine-tune: err %v, mode %q, written %q", err, rep.Training.Mode, rep.Written)
	}

	// Continuing both stages from the good policy's weights.
	cfg.Retrain = RetrainConfig{Continue: true, Train: policy.TrainConfig{Seed: 7,
		Stage1: policy.StageConfig{Epochs: 2}, Stage2: policy.StageConfig{Epochs: 2}}}
	rep, err = Run(context.Background(), cfg)
	if err != nil || rep.Training.Mode != ModeContinue || rep.Written != "" {
		t.Fatalf("continue: err %v, mode %q, written %q", err, rep.Training.Mode, rep.Written)
	}
}

// TestCarriedCuts logs solves that start with carried cuts, as the daemon's do: the replay labels
// them like any other master, keeps them as the solve's starting cuts, and the shadow re-run starts
// from them again and still reaches the logged optimum.
func TestCarriedCuts(t *testing.T) {
	dir := t.TempDir()
	logged, _ := writeLog(t, dir, telemetry.LogOptions{},
		logSpec{plant: "s1", family: synthesisFamily(), instances: synthesisInstances(12, 4, true), starts: 3, carry: true})
	d := read(t, Options{}, dir)
	if got := labelsOf(d); !slices.Equal(got, logged[0]) {
		t.Fatalf("labels %v, logged %v", got, logged[0])
	}
	carrying := 0
	for _, s := range d.Solves {
		if len(s.Carried) > 0 {
			carrying++
			if s.Y0 == nil {
				t.Errorf("solve %s has carried cuts but no y^0", s.ID)
			}
		}
	}
	if carrying == 0 {
		t.Fatal("no solve started with carried cuts")
	}
	ds := *d.Dataset
	ds.Samples = ds.Samples[:min(10, len(ds.Samples))]
	a, err := policy.Train(context.Background(), &ds, policy.TrainConfig{Arch: smallArch, Seed: 1,
		Stage1: policy.StageConfig{Epochs: 1}, Stage2: policy.StageConfig{Epochs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := Shadow(context.Background(), d.Dataset, d.Solves, nil, a, ShadowConfig{Family: synthesisFamily()})
	if err != nil {
		t.Fatal(err)
	}
	c := sh.Classical
	if sh.Rerun != len(d.Solves) || c.ReproducesLog != c.LoggedOptimal || c.LoggedOptimal != len(d.Solves) || sh.New.Rerun.MatchClassical != sh.Rerun {
		t.Errorf("re-runs: %d of %d; classical reproduces %d of %d logged optima; agent matches classical on %d",
			sh.Rerun, len(d.Solves), c.ReproducesLog, c.LoggedOptimal, sh.New.Rerun.MatchClassical)
	}
}

func checkReportFiles(t *testing.T, dir string, rep *Report) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		V      int     `json:"v"`
		Gate   Verdict `json:"gate"`
		Shadow struct {
			New PolicyReport `json:"new"`
		} `json:"shadow"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.V != 1 || got.Gate.Pass != rep.Gate.Pass || got.Shadow.New.Metrics != rep.Shadow.New.Metrics {
		t.Errorf("report JSON does not round-trip: %+v", got)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"exact match", "acceptance", "Verdict: **passed**", rep.Training.NewVersion} {
		if !strings.Contains(string(md), want) {
			t.Errorf("Markdown report lacks %q", want)
		}
	}
}

// TestGate checks the acceptance rule on made-up reports.
func TestGate(t *testing.T) {
	base := func() *ShadowReport {
		p := func(em, feas, acc, prop, match int) *PolicyReport {
			return &PolicyReport{Metrics: policy.Metrics{Samples: 100, ExactMatch: em, Feasible: feas, WithFeasCuts: 50},
				Rerun: RunStats{Solves: 10, Accepted: acc, Proposed: prop, Acceptance: float64(acc) / float64(prop), MatchClassical: match}}
		}
		return &ShadowReport{Masters: 100, Solves: 10, Rerun: 10, Old: p(60, 40, 50, 100, 10), New: p(60, 40, 50, 100, 10),
			Classical: RunStats{Solves: 10, MatchClassical: 10}}
	}
	for _, tc := range []struct {
		name   string
		gate   Gate
		modify func(r *ShadowReport)
		pass   bool
	}{
		{"equal", Gate{}, func(*ShadowReport) {}, true},
		{"better", Gate{}, func(r *ShadowReport) { r.New.Metrics.ExactMatch = 70 }, true},
		{"fewer exact matches", Gate{}, func(r *ShadowReport) { r.New.Metrics.ExactMatch = 59 }, false},
		{"fewer feasible", Gate{}, func(r *ShadowReport) { r.New.Metrics.Feasible = 39 }, false},
		{"acceptance within tolerance", Gate{}, func(r *ShadowReport) { r.New.Rerun.Acceptance = 0.485 }, true},
		{"acceptance beyond tolerance", Gate{}, func(r *ShadowReport) { r.New.Rerun.Acceptance = 0.47 }, false},
		{"no tolerance", Gate{AcceptanceTol: -1}, func(r *ShadowReport) { r.New.Rerun.Acceptance = 0.499 }, false},
		{"wider tolerance", Gate{AcceptanceTol: 0.05}, func(r *ShadowReport) { r.New.Rerun.Acceptance = 0.46 }, true},
		{"a wrong optimum", Gate{}, func(r *ShadowReport) { r.New.Rerun.MatchClassical = 9 }, false},
		{"no old policy", Gate{}, func(r *ShadowReport) { r.Old = nil; r.New.Metrics.ExactMatch = 0 }, true},
		{"no old policy, a wrong optimum", Gate{}, func(r *ShadowReport) { r.Old = nil; r.New.Rerun.MatchClassical = 9 }, false},
		{"no old policy, classical's own re-run failed", Gate{}, func(r *ShadowReport) {
			r.Old = nil
			r.Classical.MatchClassical, r.New.Rerun.MatchClassical = 9, 9
		}, true},
		{"empty held-out slice", Gate{}, func(r *ShadowReport) { r.Masters, r.Rerun = 0, 0 }, false},
	} {
		r := base()
		tc.modify(r)
		v := tc.gate.Judge(r)
		if v.Pass != tc.pass || v.Reason == "" {
			t.Errorf("%s: pass %v (%s), want %v", tc.name, v.Pass, v.Reason, tc.pass)
		}
	}
}

// TestConstantReference: the most frequent training label, scored on the held-out masters.
func TestConstantReference(t *testing.T) {
	mk := func(labels ...int) *policy.Dataset {
		d := &policy.Dataset{}
		for _, l := range labels {
			d.Samples = append(d.Samples, policy.Sample{Label: l})
		}
		return d
	}
	c := constantReference(mk(3, 1, 3, 2, 1, 3), mk(3, 3, 0, 1))
	if c == nil || c.Label != 3 || c.HeldOutExact != 2 || c.HeldOutMasters != 4 {
		t.Errorf("reference %+v, want label 3 matching 2 of 4", c)
	}
	if c := constantReference(mk(2, 1), mk(1)); c == nil || c.Label != 1 {
		t.Errorf("tie: %+v, want the smaller label 1", c)
	}
	if constantReference(mk(), mk(1)) != nil {
		t.Error("a reference without training labels")
	}
}
