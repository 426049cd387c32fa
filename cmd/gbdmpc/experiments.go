package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gbdmpc/experiment"
	"gbdmpc/gbd"
	"gbdmpc/policy"
)

func init() {
	register("datagen", "generate expert master-problem data with classical GBD (paper protocol)", cmdDatagen)
	register("train", "train a policy with Algorithm 1 (two-stage feasibility-aware imitation learning)", cmdTrain)
	register("eval", "Table I: exact match and cut feasibility of a policy on a dataset", cmdEval)
	register("bench", "Table II: classical vs agent-based GBD on fresh instances", cmdBench)
}

// progressBar draws a one-line progress bar on w (a terminal or a log).
func progressBar(w io.Writer, label string, done, total int, extra string, start time.Time) {
	const width = 30
	n := width * done / max(total, 1)
	fmt.Fprintf(w, "\r%s [%s%s] %d/%d %s %.0fs", label, strings.Repeat("#", n), strings.Repeat(".", width-n),
		done, total, extra, time.Since(start).Seconds())
	if done == total {
		fmt.Fprintln(w)
	}
}

func cmdDatagen(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("datagen", stderr)
	plant := fs.String("plant", "synthesis", "plant family")
	sets := fs.Int("sets", 300, "feasible parameter sets")
	seed := fs.Uint64("seed", 1, "sampling seed")
	starts := fs.Int("starts", 0, "initial assignments per set (0: every one of Y_pb)")
	testFrac := fs.Float64("test-fraction", 0.05, "fraction of sets held out as the test split")
	out := fs.String("out", "data", "output directory")
	if err := parse(fs, args); err != nil {
		return err
	}
	fam, err := familyByName(*plant)
	if err != nil {
		return err
	}
	sample, err := samplerByName(*plant)
	if err != nil {
		return err
	}
	if *testFrac <= 0 || *testFrac >= 1 {
		return fmt.Errorf("--test-fraction must be in (0,1)")
	}
	start := time.Now()
	ds, st, err := experiment.Datagen(ctx, experiment.DatagenConfig{
		Family: fam, Sample: sample, Sets: *sets, Seed: *seed, Starts: *starts,
		Progress: func(done, total, samples int) {
			progressBar(stderr, "datagen", done, total, fmt.Sprintf("sets, %d samples", samples), start)
		},
	})
	if err != nil {
		return err
	}
	train, test, err := policy.SplitBySet(ds, *testFrac, *seed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := policy.SaveDataset(filepath.Join(*out, "train.jsonl.gz"), train); err != nil {
		return err
	}
	if err := policy.SaveDataset(filepath.Join(*out, "test.jsonl.gz"), test); err != nil {
		return err
	}
	meta := map[string]any{
		"v": 1, "family": fam.Name(), "sets": st.Sets, "seed": *seed, "runs": st.Runs,
		"samples": st.Samples, "train": len(train.Samples), "test": len(test.Samples),
		"test_with_feasibility_cuts": countFeas(test), "skipped_infeasible_sets": st.Skipped,
		"mean_gbd_iterations": st.MeanIterations, "seconds": time.Since(start).Seconds(),
	}
	b, _ := json.MarshalIndent(meta, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "meta.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "datagen: %d sets (%d infeasible draws skipped), %d GBD runs (%.2f iterations each), %d samples: %d train / %d test (%d with feasibility cuts) in %s\n",
		st.Sets, st.Skipped, st.Runs, st.MeanIterations, st.Samples, len(train.Samples), len(test.Samples),
		countFeas(test), *out)
	return nil
}

func countFeas(ds *policy.Dataset) int {
	n := 0
	for _, s := range ds.Samples {
		for _, c := range s.Cuts {
			if c.Kind == gbd.FeasibilityCut {
				n++
				break
			}
		}
	}
	return n
}

func cmdTrain(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("train", stderr)
	data := fs.String("data", "data", "dataset directory (from datagen) or a dataset file")
	out := fs.String("out", "policy.gbdp", "policy file to write")
	variant := fs.String("variant", "proposed", "proposed | baseline (stage 1 only) | independent")
	e1 := fs.Int("stage1-epochs", 20, "stage-1 epochs")
	e2 := fs.Int("stage2-epochs", 20, "stage-2 epochs (proposed only)")
	seed := fs.Uint64("seed", 1, "initialisation and shuffling seed")
	varIndex := fs.Bool("var-index", false, "add a one-hot of each binary's index to its node features (not in the paper)")
	if err := parse(fs, args); err != nil {
		return err
	}
	train, test, err := loadSplit(*data)
	if err != nil {
		return err
	}
	cfg := policy.TrainConfig{Variant: policy.Variant(*variant), Seed: *seed, Arch: policy.Arch{VarIndex: *varIndex},
		Stage1: policy.StageConfig{Epochs: *e1}, Stage2: policy.StageConfig{Epochs: *e2},
		Progress: func(m policy.EpochMetrics) {
			fmt.Fprintf(stderr, "stage %d epoch %2d/%d  loss %.4f  accuracy %.2f%%  feasible %.2f%%\n",
				m.Stage, m.Epoch, m.Epochs, m.Loss, 100*m.Accuracy, 100*m.Feasible)
		}}
	start := time.Now()
	a, err := policy.Train(ctx, train, cfg)
	if err != nil {
		return err
	}
	if test != nil {
		m, err := policy.Evaluate(a, test)
		if err != nil {
			return err
		}
		a.SetHeldOut(m)
		fmt.Fprintf(stdout, "held-out: %s\n", m)
	}
	if err := a.Save(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "trained %s policy %s on %d samples in %.1fs → %s\n", *variant, a.Version(), len(train.Samples), time.Since(start).Seconds(), *out)
	return nil
}

// loadSplit reads train.jsonl.gz (and test.jsonl.gz when present) from a datagen directory, or one file.
func loadSplit(path string) (train, test *policy.Dataset, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.IsDir() {
		train, err = policy.LoadDataset(path)
		return train, nil, err
	}
	train, err = policy.LoadDataset(filepath.Join(path, "train.jsonl.gz"))
	if err != nil {
		return nil, nil, err
	}
	tp := filepath.Join(path, "test.jsonl.gz")
	if _, err := os.Stat(tp); err == nil {
		test, err = policy.LoadDataset(tp)
		if err != nil {
			return nil, nil, err
		}
	}
	return train, test, nil
}

func cmdEval(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("eval", stderr)
	data := fs.String("data", "data", "dataset directory (its test split is used) or a dataset file")
	asJSON := fs.Bool("json", false, "print JSON")
	var pols multiFlag
	fs.Var(&pols, "policy", "policy file (repeatable: one row per policy)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(pols) == 0 {
		return fmt.Errorf("--policy is required")
	}
	ds, test, err := loadSplit(*data)
	if err != nil {
		return err
	}
	if test != nil {
		ds = test
	}
	type row struct {
		Policy  string         `json:"policy"`
		Variant string         `json:"variant"`
		Metrics policy.Metrics `json:"metrics"`
	}
	var rows []row
	for _, p := range pols {
		a, err := policy.Load(p)
		if err != nil {
			return err
		}
		m, err := policy.Evaluate(a, ds)
		if err != nil {
			return err
		}
		rows = append(rows, row{Policy: p, Variant: string(a.Variant()), Metrics: m})
	}
	if *asJSON {
		b, _ := json.MarshalIndent(map[string]any{"v": 1, "samples": len(ds.Samples), "rows": rows}, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "| Policy | Variant | Exact match | Feasibility (points with feasibility cuts) |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(stdout, "| %s | %s | %d/%d (%.2f%%) | %d/%d (%.2f%%) |\n", r.Policy, r.Variant,
			r.Metrics.ExactMatch, r.Metrics.Samples, r.Metrics.ExactMatchPct, r.Metrics.Feasible, r.Metrics.WithFeasCuts, r.Metrics.FeasiblePct)
	}
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func cmdBench(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	var o solveOptions
	o.register(fs)
	sets := fs.Int("sets", 30, "fresh feasible parameter sets")
	indep := fs.String("independent", "", "independent-IL policy file (optional)")
	out := fs.String("out", "", "write table2.md and table2.json into this directory")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	fam, err := familyByName(o.plant)
	if err != nil {
		return err
	}
	sample, err := samplerByName(o.plant)
	if err != nil {
		return err
	}
	cbcM, _ := masterByName("cbc")
	enumM, _ := masterByName("enum")
	methods := []experiment.Method{{Name: "classical GBD (cbc)", NewMaster: cbcM}}
	if *indep != "" {
		p, err := loadPolicy(*indep, o.seed, fam)
		if err != nil {
			return err
		}
		methods = append(methods, experiment.Method{Name: "independent IL (cbc)", Policy: p, NewMaster: cbcM})
	}
	if o.policy != "" {
		p, err := loadPolicy(o.policy, o.seed, fam)
		if err != nil {
			return err
		}
		q, _ := loadPolicy(o.policy, o.seed, fam)
		methods = append(methods, experiment.Method{Name: "proposed (cbc)", Policy: p, NewMaster: cbcM},
			experiment.Method{Name: "proposed (enum)", Policy: q, NewMaster: enumM})
	}
	methods = append(methods, experiment.Method{Name: "classical GBD (enum)", NewMaster: enumM})
	start := time.Now()
	rep, err := experiment.Bench(ctx, experiment.BenchConfig{
		Family: fam, Sample: sample, Sets: *sets, Seed: o.seed + 1000, Methods: methods,
		Settings: o.settings(), Reference: methods[0].Name,
		Progress: func(done, total int) { progressBar(stderr, "bench", done, total, "sets", start) },
	})
	if err != nil {
		return err
	}
	md := rep.Markdown()
	fmt.Fprint(stdout, md)
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		js, err := rep.JSON()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, "table2.md"), []byte(md), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, "table2.json"), append(js, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
