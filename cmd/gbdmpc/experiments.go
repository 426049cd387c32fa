package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gbdmpc/backend"
	"gbdmpc/experiment"
	"gbdmpc/gbd"
	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/plant/registry"
	"gbdmpc/policy"
	"gbdmpc/solver"
)

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
	spec := solver.DefaultSpec()
	spec.RegisterFlags(fs, "nlp")
	var pc plantConfig
	pc.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	newNLP, err := backend.NLPByName(spec.NLP)
	if err != nil {
		return fmt.Errorf("--nlp: %w", err)
	}
	fam, err := pc.family(*plant)
	if err != nil {
		return err
	}
	sample, err := registry.SamplerFor(fam)
	if err != nil {
		return err
	}
	if *testFrac <= 0 || *testFrac >= 1 {
		return fmt.Errorf("--test-fraction must be in (0,1)")
	}
	start := time.Now()
	ds, st, err := experiment.Datagen(ctx, experiment.DatagenConfig{
		Family: fam, Sample: sample, Sets: *sets, Seed: *seed, Starts: *starts, NewNLP: newNLP,
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
	if err := saveSplit(*out, train, test); err != nil {
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
	baseOut := fs.String("baseline-out", "", "proposed only: also write the stage-1 network (the baseline) here; it is the same as training --variant baseline with this seed")
	variant := fs.String("variant", "proposed", "proposed | baseline (stage 1 only) | independent | structured (per-binary scores decoded over Y_pb and the feasibility cuts; for a Y_pb too large to enumerate)")
	e1 := fs.Int("stage1-epochs", 20, "stage-1 epochs")
	e2 := fs.Int("stage2-epochs", 20, "stage-2 epochs (proposed and structured)")
	seed := fs.Uint64("seed", 1, "initialisation and shuffling seed")
	preset := fs.String("preset", policy.DefaultPreset, "network and optimiser: paper (as the paper's text) | paper-features (the paper's features, the network that fits them) | best | light (best's features in a network fast enough for hundreds of cuts) | light-node (light with a per-node head) | light-prev (light with each cut's value at the previous iterate); the options below change single settings of it")
	varIndex := fs.Bool("var-index", false, "add a one-hot of each binary's index to its node features (not in the paper; overrides the preset)")
	cutAtPrev := fs.Bool("cut-at-prev", false, "give each cut node its value at the previous master iterate, relative to the optimality cuts' envelope there (not in the paper; overrides the preset)")
	cutCoefs := fs.Bool("cut-coefs", false, "give each cut node its coefficients, in binary order, as node features (not in the paper; overrides the preset)")
	cutNorm := fs.String("cut-norm", "", "cut normalisation before the fitted one: \"\" (per kind, over the training data) | master (each master by its argmin's symmetries); overrides the preset")
	wd := fs.Float64("weight-decay", 0, "AdamW decoupled weight decay of both stages (0: the paper's Adam; overrides the preset)")
	trainSets := fs.Int("train-sets", 0, "train on the samples of only this many parameter sets of the training split, the lowest-numbered (0: all; for learning curves)")
	kernel := fs.Int("kernel", 0, "hidden units of each ECC layer's kernel network (0: linear, Spektral's default; overrides the preset)")
	poolAll := fs.Bool("pool-all", false, "read out every ECC layer's node states, concatenated (jumping knowledge; not in the paper; overrides the preset)")
	aggr := fs.String("aggr", "", "ECC neighbour aggregation: \"\" (sum, the paper's) | mean (sum divided by the degree); overrides the preset")
	pool := fs.String("pool", "", "readout: \"\" (global sum pooling, the paper's) | summax (sum and max pooling concatenated); overrides the preset")
	perNode := fs.Bool("per-node", false, "score each binary from its own variable node and the readout (independent and structured variants; not in the paper; overrides the preset)")
	if err := parse(fs, args); err != nil {
		return err
	}
	train, test, err := loadSplit(*data)
	if err != nil {
		return err
	}
	if *trainSets < 0 {
		return fmt.Errorf("--train-sets must be ≥ 0")
	}
	if *trainSets > 0 {
		train = firstSets(train, *trainSets)
	}
	pre, err := policy.PresetByName(*preset)
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	cfg := policy.TrainConfig{Variant: policy.Variant(*variant), Seed: *seed,
		Stage1: policy.StageConfig{Epochs: *e1}, Stage2: policy.StageConfig{Epochs: *e2},
		Progress: func(m policy.EpochMetrics) {
			fmt.Fprintf(stderr, "stage %d epoch %2d/%d  loss %.4f  accuracy %.2f%%  feasible %.2f%%\n",
				m.Stage, m.Epoch, m.Epochs, m.Loss, 100*m.Accuracy, 100*m.Feasible)
		}}
	pre.Apply(&cfg)
	fs.Visit(func(f *flag.Flag) { // the options given change single settings of the preset
		switch f.Name {
		case "var-index":
			cfg.Arch.VarIndex = *varIndex
		case "cut-coefs":
			cfg.Arch.CutCoefs = *cutCoefs
		case "cut-at-prev":
			cfg.Arch.CutAtPrev = *cutAtPrev
		case "cut-norm":
			cfg.Arch.CutNorm = *cutNorm
		case "weight-decay":
			cfg.Stage1.WeightDecay, cfg.Stage2.WeightDecay = *wd, *wd
		case "kernel":
			cfg.Arch.Kernel = *kernel
		case "pool-all":
			cfg.Arch.PoolAll = *poolAll
		case "aggr":
			cfg.Arch.Aggr = *aggr
		case "pool":
			cfg.Arch.Pool = *pool
		case "per-node":
			cfg.Arch.PerNode = *perNode
		}
	})
	start := time.Now()
	var a *policy.Agent
	if *baseOut != "" {
		if cfg.Variant != policy.Proposed {
			return fmt.Errorf("--baseline-out needs --variant proposed")
		}
		bc := cfg
		bc.Variant = policy.Baseline
		base, err := policy.Train(ctx, train, bc)
		if err != nil {
			return err
		}
		if err := finishPolicy(base, test, *baseOut, stdout); err != nil {
			return err
		}
		if a, err = policy.FineTune(ctx, base, train, cfg); err != nil {
			return err
		}
	} else if a, err = policy.Train(ctx, train, cfg); err != nil {
		return err
	}
	if err := finishPolicy(a, test, *out, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "trained %s policy %s (%s) on %d samples in %.1fs → %s\n", *variant, a.Version(), inferenceLabel(a), len(train.Samples), time.Since(start).Seconds(), *out)
	return nil
}

// finishPolicy scores a trained agent on the held-out split (when there is one), records the scores
// in it and saves it.
func finishPolicy(a *policy.Agent, test *policy.Dataset, path string, stdout io.Writer) error {
	if test != nil {
		m, err := policy.Evaluate(a, test)
		if err != nil {
			return err
		}
		a.SetHeldOut(m)
		fmt.Fprintf(stdout, "held-out (%s, %s): %s\n", a.Variant(), inferenceLabel(a), m)
	}
	return a.Save(path)
}

// firstSets keeps the samples of the n lowest-numbered parameter sets of ds.
func firstSets(ds *policy.Dataset, n int) *policy.Dataset {
	var sets []int
	seen := map[int]bool{}
	for _, s := range ds.Samples {
		if !seen[s.Set] {
			seen[s.Set] = true
			sets = append(sets, s.Set)
		}
	}
	slices.Sort(sets)
	keep := map[int]bool{}
	for _, s := range sets[:min(n, len(sets))] {
		keep[s] = true
	}
	out := &policy.Dataset{Family: ds.Family, Ypb: ds.Ypb}
	for _, s := range ds.Samples {
		if keep[s.Set] {
			out.Samples = append(out.Samples, s)
		}
	}
	return out
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

// saveSplit writes a datagen directory's two splits, the files loadSplit reads.
func saveSplit(dir string, train, test *policy.Dataset) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := policy.SaveDataset(filepath.Join(dir, "train.jsonl.gz"), train); err != nil {
		return err
	}
	return policy.SaveDataset(filepath.Join(dir, "test.jsonl.gz"), test)
}

func cmdResplit(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("resplit", stderr)
	data := fs.String("data", "data", "datagen directory (its train and test splits are joined first)")
	by := fs.String("by", "set", "set (the protocol: no parameter set on both sides) | sample (master problems split at random)")
	testFrac := fs.Float64("test-fraction", 0.05, "fraction of sets (or samples) held out")
	seed := fs.Uint64("seed", 1, "split seed")
	out := fs.String("out", "", "output directory (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("--out is required")
	}
	train, test, err := loadSplit(*data)
	if err != nil {
		return err
	}
	all := &policy.Dataset{Family: train.Family, Ypb: train.Ypb, Samples: train.Samples}
	if test != nil {
		all.Samples = append(slices.Clip(all.Samples), test.Samples...)
	}
	split := policy.SplitBySet
	switch *by {
	case "set":
	case "sample":
		split = policy.SplitBySample
	default:
		return fmt.Errorf("--by must be set or sample, not %q", *by)
	}
	tr, te, err := split(all, *testFrac, *seed)
	if err != nil {
		return err
	}
	if err := saveSplit(*out, tr, te); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "resplit by %s: %d train / %d test (%d with feasibility cuts) in %s\n", *by, len(tr.Samples), len(te.Samples), countFeas(te), *out)
	return nil
}

func cmdDatastats(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("datastats", stderr)
	data := fs.String("data", "data", "dataset directory (from datagen) or a dataset file")
	if err := parse(fs, args); err != nil {
		return err
	}
	train, test, err := loadSplit(*data)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "train\n%v", experiment.DescribeData(train))
	if test != nil {
		fmt.Fprintf(stdout, "\ntest\n%v\ntest masters also in train: %d\n", experiment.DescribeData(test), experiment.CrossDuplicates(train, test))
	}
	return nil
}

func cmdEval(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("eval", stderr)
	data := fs.String("data", "data", "dataset directory (its test split is used) or a dataset file")
	asJSON := fs.Bool("json", false, "print JSON")
	cands := fs.Int("candidates", 0, "structured agents: also score them screening this many best-scored assignments by the optimality cuts (--agent-candidates)")
	var pols multiFlag
	fs.Var(&pols, "policy", "policy file (repeatable: one row per policy)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(pols) == 0 {
		return fmt.Errorf("--policy is required")
	}
	if err := solver.CheckCandidates("--candidates", *cands); err != nil {
		return err
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
		Own     bool           `json:"own_inference"` // the inference the policy file proposes with
		Cands   int            `json:"candidates,omitempty"`
		Metrics policy.Metrics `json:"metrics"`
	}
	var rows []row
	for _, p := range pols {
		a, err := policy.Load(p)
		if err != nil {
			return err
		}
		// Table I sets every variant beside the others both ways: the raw logits ℓ (the paper's
		// Algorithm 2) and the feasibility-adjusted ℓ̃ = ℓ − ω·s. The independent agent proposes
		// probabilities, so it has one row.
		modes := []policy.Inference{policy.Raw, policy.Adjusted}
		if a.Variant() == policy.Independent {
			modes = modes[:1]
		}
		for _, m := range modes {
			met, err := policy.EvaluateAs(a, ds, m)
			if err != nil {
				return err
			}
			rows = append(rows, row{Policy: p, Variant: string(a.Variant()), Own: m == a.Inference(), Metrics: met})
		}
		if a.Variant() == policy.Structured && *cands > 1 {
			met, err := policy.EvaluateScreened(a, ds, *cands)
			if err != nil {
				return err
			}
			rows = append(rows, row{Policy: p, Variant: string(a.Variant()), Cands: *cands, Metrics: met})
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(map[string]any{"v": 1, "samples": len(ds.Samples), "rows": rows}, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	tied := 0
	if len(rows) > 0 {
		tied = rows[0].Metrics.Tied
	}
	fmt.Fprintf(stdout, "| Policy | Variant | Logits | Exact match | Any optimal (%d tied) | Feasibility (points with feasibility cuts) | μ_B above the optimum |\n|---|---|---|---|---|---|---|\n", tied)
	for _, r := range rows {
		logits := string(r.Metrics.Inference)
		switch {
		case r.Cands > 1:
			logits = fmt.Sprintf("— (least μ_B of its %d best-scored)", r.Cands)
		case r.Variant == string(policy.Structured):
			logits = "— (best-scored)"
		case logits == "":
			logits = "— (probabilities)"
		}
		if r.Own {
			logits += " *"
		}
		regret := "—"
		if r.Metrics.Regretted > 0 {
			regret = fmt.Sprintf("%.2f%% (mean of %d)", r.Metrics.MeanRegretPct, r.Metrics.Regretted)
		}
		fmt.Fprintf(stdout, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Policy, r.Variant, logits,
			policy.Ratio(r.Metrics.ExactMatch, r.Metrics.Samples, 2), policy.Ratio(r.Metrics.AnyOptimal, r.Metrics.Samples, 2),
			policy.Ratio(r.Metrics.Feasible, r.Metrics.WithFeasCuts, 2), regret)
	}
	fmt.Fprintln(stdout, "\n* the inference the policy file proposes with (what Algorithm 2 runs). Feasibility uses the engine's screen, φ_f ≤ gbd.FeasTol.")
	return nil
}

// inferenceLabel names how an agent proposes, for tables and logs.
func inferenceLabel(a *policy.Agent) string {
	if a.Variant() == policy.Independent {
		return "probabilities"
	}
	return string(a.Inference()) + " logits"
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
	fam, err := o.config.family(o.plant)
	if err != nil {
		return err
	}
	sample, err := registry.SamplerFor(fam)
	if err != nil {
		return err
	}
	newNLP, err := o.newNLP()
	if err != nil {
		return err
	}
	// Table II measures the method's master time as the paper does, the solver in process: CBC
	// inline here, not in the worker process the daemon and the other commands use (which adds
	// ~0.3 ms to a synthesis master of ~1 ms; docs/experiments.md, Table II).
	cbcM := func() gbd.Master { return &cbc.Master{} }
	enumM := func() gbd.Master { return &enum.Master{} }
	const classicalCBC, classicalEnum = "classical GBD (cbc)", "classical GBD (enum)"
	methods := []experiment.Method{{Name: classicalCBC, NewMaster: cbcM, Reference: classicalCBC}}
	if *indep != "" {
		p, _, err := loadPolicy(*indep, o.seed, fam)
		if err != nil {
			return err
		}
		methods = append(methods, experiment.Method{Name: "independent IL (cbc)", Policy: p, NewMaster: cbcM, Reference: classicalCBC})
	}
	if o.policy != "" {
		// Two instances: a policy serves one solve at a time and keeps buffers.
		var ps [2]gbd.Policy
		label := "proposed"
		for i := range ps {
			p, _, err := loadPolicy(o.policy, o.seed, fam)
			if err != nil {
				return err
			}
			if a, ok := p.(*policy.Agent); ok {
				label = fmt.Sprintf("%s, %s", a.Variant(), inferenceLabel(a))
			}
			ps[i] = p
		}
		methods = append(methods, experiment.Method{Name: label + " (cbc)", Policy: ps[0], NewMaster: cbcM, Reference: classicalCBC},
			experiment.Method{Name: label + " (enum)", Policy: ps[1], NewMaster: enumM, Reference: classicalEnum})
	}
	methods = append(methods, experiment.Method{Name: classicalEnum, NewMaster: enumM, Reference: classicalEnum})
	start := time.Now()
	rep, err := experiment.Bench(ctx, experiment.BenchConfig{
		Family: fam, Sample: sample, Sets: *sets, Seed: o.seed + 1000, Methods: methods,
		Settings: o.settings(), Reference: methods[0].Name, NewNLP: newNLP,
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
