package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gbdmpc/backend"
	"gbdmpc/experiment"
	"gbdmpc/gbd"
	"gbdmpc/gbd/agent"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/policy"
	"gbdmpc/solver"
)

func cmdScaling(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("scaling", stderr)
	sizes := fs.String("sizes", "12,24,40", "station sizes in binaries: 12, 24, 40 (specs/pumpstation.md, Sizes) or 60 (5 pumps × 12 blocks of 2 steps)")
	steps := fs.Int("steps", 96, "control periods per run (96 = one day)")
	var budget time.Duration
	solver.DurationVar(fs, &budget, "step-deadline", 0, "per-step solve deadline, 0 for the simulator's 5 s")
	simSeed := fs.Uint64("sim-seed", 1, "simulator seed, the same for every method")
	var policies multiFlag
	fs.Var(&policies, "policy", "SIZE=FILE: an agent for that size, a policy file or builtin:NAME (repeatable: each distinct FILE is a method, e.g. a trained agent and builtin:oracle, the perfect agent's bound); sizes without one run classical GBD only")
	// The scaling study's T_min and T_max are a 40-binary station's (configs/pumpstation-40.yaml).
	spec := solver.DefaultSpec()
	spec.TMin, spec.TMax = 50*time.Millisecond, 200*time.Millisecond
	spec.RegisterFlags(fs, "nlp", "cuts", "eps", "tmin", "tmax", "master", "agent_candidates", "agent_polish", "agent_patience")
	pool := fs.Int("carry-pool", 0, "cuts kept for carrying between steps (0: the default, 16 with the enum master, 64 with the others)")
	out := fs.String("out", "out/scaling", "directory for scaling.md, scaling.json and scaling.png")
	if err := parse(fs, args); err != nil {
		return err
	}
	ns, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	// Every distinct spec is a method (a row per size it is given for), in the order first given.
	type agentSpec struct {
		spec  string
		sizes map[int]bool
	}
	var specs []*agentSpec
	for _, p := range policies {
		k, v, ok := strings.Cut(p, "=")
		n, err := strconv.Atoi(k)
		if !ok || err != nil || v == "" {
			return fmt.Errorf("--policy %q: want SIZE=FILE", p)
		}
		i := slices.IndexFunc(specs, func(a *agentSpec) bool { return a.spec == v })
		if i < 0 {
			specs = append(specs, &agentSpec{spec: v, sizes: map[int]bool{}})
			i = len(specs) - 1
		}
		specs[i].sizes[n] = true
	}
	if *steps < 1 || budget < 0 || *pool < 0 {
		return fmt.Errorf("need --steps ≥ 1, --step-deadline ≥ 0 and --carry-pool ≥ 0")
	}
	if err := spec.CheckFlags(); err != nil {
		return err
	}
	newNLP, err := backend.NLPByName(spec.NLP)
	if err != nil {
		return fmt.Errorf("--nlp: %w", err)
	}
	methods := []experiment.ScalingMethod{{Name: "classical GBD"}}
	for _, a := range specs {
		name := "agent " + filepath.Base(a.spec)
		if strings.HasPrefix(a.spec, agent.BuiltinPrefix) {
			name = a.spec
		}
		methods = append(methods, experiment.ScalingMethod{Name: name, Policy: func(fam *pumpstation.Family) (gbd.Policy, error) {
			if c := fam.Config(); !a.sizes[c.NY()] {
				return nil, nil
			}
			pol, _, err := policy.Resolve(a.spec, *simSeed, fam.Name(), fam.Admissible())
			return pol, err
		}})
	}
	start := time.Now()
	rows, err := experiment.Scaling(ctx, experiment.ScalingConfig{
		Sizes: ns, Steps: *steps, StepBudget: budget, SimSeed: *simSeed,
		Methods: methods, NewNLP: newNLP, CarryPool: *pool, Master: spec.Master,
		Settings: spec.Settings(),
		Progress: func(size int, method string, step, total int) {
			progressBar(stderr, fmt.Sprintf("%d binaries, %s", size, method), step, total, "steps", start)
		},
	})
	if err != nil {
		return err
	}
	if err := experiment.WriteScalingMarkdown(stdout, rows); err != nil {
		return err
	}
	if err := writeOutputs(*out, []outputFile{
		{"scaling.md", func(w io.Writer) error { return experiment.WriteScalingMarkdown(w, rows) }},
		{"scaling.json", func(w io.Writer) error { return experiment.WriteScalingJSON(w, rows) }},
		{"scaling.png", func(w io.Writer) error { return experiment.WriteScalingFigure(w, rows) }},
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s/{scaling.md,scaling.json,scaling.png}\n", *out)
	return nil
}

// outputFile is one file an experiment command writes: its name and what writes it.
type outputFile struct {
	name  string
	write func(io.Writer) error
}

// writeOutputs creates dir and writes each file into it.
func writeOutputs(dir string, files []outputFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		fh, err := os.Create(path)
		if err != nil {
			return err
		}
		werr := f.write(fh)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("%s: %w", path, werr)
		}
	}
	return nil
}

// parseSizes reads --sizes: reference station sizes in binaries (pumpstation.SizedConfig).
func parseSizes(list string) ([]int, error) {
	ns, bad, ok := parseInts(list)
	if !ok {
		return nil, fmt.Errorf("--sizes: %q is not a number", bad)
	}
	for _, n := range ns {
		if _, err := pumpstation.SizedConfig(n); err != nil {
			return nil, fmt.Errorf("--sizes: %w", err)
		}
	}
	return ns, nil
}

// parseInts reads a list of integers separated by commas, with spaces around each allowed (the
// commands' --sizes, --instances and --plants); ok is false at the first field that is none, bad.
func parseInts(list string) (ns []int, bad string, ok bool) {
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, f, false
		}
		ns = append(ns, n)
	}
	return ns, "", true
}
