package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"gbdmpc/testbed"
)

func cmdSoak(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("soak", stderr)
	steps := fs.Int("steps", 2000, "closed-loop steps")
	family := fs.String("family", "synthesis", "plant family: synthesis (back-to-back solves) or pumpstation (MQTT testbed)")
	period := fs.Duration("period", 0, "plant period (deadline = period/2; default 2s for synthesis, 250ms for pumpstation)")
	warmup := fs.Int("warmup", 0, "steps before the baseline sample (default steps/10, at most 200)")
	seed := fs.Uint64("seed", 1, "seed of the measurements")
	dir := fs.String("decision-log", "", "decision-log directory (default: a temporary one, removed afterwards)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	progress := fs.Bool("progress", false, "print progress to stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	o := testbed.SoakOptions{Steps: *steps, Family: *family, Period: *period, WarmUp: *warmup, Seed: *seed, DecisionDir: *dir}
	if *progress {
		every := max(1, *steps/100)
		o.OnStep = func(done int) {
			if done%every == 0 || done == *steps {
				fmt.Fprintf(stderr, "\rsoak: %d/%d steps", done, *steps)
			}
		}
	}
	rep, err := testbed.RunSoak(ctx, o)
	if *progress {
		fmt.Fprintln(stderr)
	}
	if rep.Start.Goroutines == 0 {
		return err // the plant never connected: nothing to report
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(struct {
			V int `json:"v"`
			testbed.SoakReport
		}{1, rep}); jerr != nil && err == nil {
			err = jerr
		}
	} else if werr := rep.WriteText(stdout); werr != nil && err == nil {
		err = werr
	}
	return err
}
