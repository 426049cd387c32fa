package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"gbdmpc/backend"
	"gbdmpc/experiment"
	"gbdmpc/solver"
)

// cmdCuts is the cut study: iterations and solve time per solve against the station's binaries,
// GBD's classical optimality cuts, the strengthened ones and stage cuts, on the same fresh instances.
func cmdCuts(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("cuts", stderr)
	sizes := fs.String("sizes", "12,24,40", "station sizes in binaries: 12, 24, 40, 60 (pumpstation.SizedConfig)")
	n := fs.String("instances", "8", "instances per size, from scratch, every second one hard (sustained two-pump demand): one count for every size, or one per size of --sizes (24,24,24,6)")
	seed := fs.Uint64("seed", 1, "seed of the instances")
	limit := fs.Duration("limit", time.Minute, "wall-clock budget of each solve (0: none); a solve it stops is uncertified")
	spec := solver.DefaultSpec()
	spec.RegisterFlags(fs, "nlp", "eps")
	out := fs.String("out", "out/cuts", "directory for cuts.md, cuts.json and cuts.png")
	if err := parse(fs, args); err != nil {
		return err
	}
	ns, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	counts, err := parseCounts(*n, len(ns))
	if err != nil {
		return err
	}
	if *limit < 0 {
		return fmt.Errorf("need --limit ≥ 0")
	}
	perSize := map[int]int{}
	for i, size := range ns {
		perSize[size] = counts[i]
	}
	if err := spec.CheckFlags(); err != nil {
		return err
	}
	newNLP, err := backend.NLPByName(spec.NLP)
	if err != nil {
		return fmt.Errorf("--nlp: %w", err)
	}
	start := time.Now()
	rows, err := experiment.Cuts(ctx, experiment.CutsConfig{
		Sizes: ns, Instances: counts[0], PerSize: perSize, Seed: *seed, Limit: *limit, NewNLP: newNLP, Settings: spec.Settings(),
		Progress: func(size int, cuts string, i, total int) {
			progressBar(stderr, fmt.Sprintf("%d binaries, %s cuts", size, cuts), i, total, "solves", start)
		},
	})
	if err != nil {
		return err
	}
	if err := experiment.WriteCutsMarkdown(stdout, rows); err != nil {
		return err
	}
	if err := writeOutputs(*out, []outputFile{
		{"cuts.md", func(w io.Writer) error { return experiment.WriteCutsMarkdown(w, rows) }},
		{"cuts.json", func(w io.Writer) error { return experiment.WriteCutsJSON(w, rows) }},
		{"cuts.png", func(w io.Writer) error { return experiment.WriteCutsFigure(w, rows) }},
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s/{cuts.md,cuts.json,cuts.png}\n", *out)
	return nil
}

// parseCounts reads --instances: one positive count for every size, or one per size.
func parseCounts(s string, sizes int) ([]int, error) {
	counts, _, ok := parseInts(s)
	if ok && slices.ContainsFunc(counts, func(k int) bool { return k < 1 }) {
		ok = false
	}
	if !ok {
		return nil, fmt.Errorf("--instances %q: want positive integers", s)
	}
	switch len(counts) {
	case sizes:
		return counts, nil
	case 1:
		return slices.Repeat(counts, sizes), nil
	}
	return nil, fmt.Errorf("--instances %q: want one count or one per size (%d)", s, sizes)
}
