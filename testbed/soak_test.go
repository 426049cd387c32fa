package testbed

import (
	"strings"
	"testing"

	"gbdmpc/internal/knob"
	"gbdmpc/internal/testsupport"
)

// TestSoakNoGrowth runs the daemon and the synthesis plant in this process for GBDMPC_SOAK_STEPS
// steps (default 1,000) and checks that nothing grows once warmed up: goroutines and open files
// within ±5 of the baseline, RSS within 40 MiB, and that every step got its action from a loop that
// never dropped a decision record.
func TestSoakNoGrowth(t *testing.T) {
	testsupport.Long(t, "soak")
	steps := knob.Env(t, "GBDMPC_SOAK_STEPS", 1000, 1)
	rep, err := RunSoak(t.Context(), SoakOptions{Steps: steps, WarmUp: 200, DecisionDir: t.TempDir()})
	var b strings.Builder
	_ = rep.WriteText(&b)
	t.Log("\n" + b.String())
	if err != nil {
		t.Fatal(err)
	}
	base, end := rep.Baseline, rep.End
	if d := end.Goroutines - base.Goroutines; d > 5 || d < -5 {
		t.Errorf("goroutines %d → %d", base.Goroutines, end.Goroutines)
	}
	if base.OpenFiles >= 0 {
		if d := end.OpenFiles - base.OpenFiles; d > 5 || d < -5 {
			t.Errorf("open files %d → %d", base.OpenFiles, end.OpenFiles)
		}
	}
	if base.RSSBytes >= 0 {
		if d := end.RSSBytes - base.RSSBytes; d > 40<<20 {
			t.Errorf("RSS grew by %.1f MiB after the warm-up (%d → %d bytes)", float64(d)/(1<<20), base.RSSBytes, end.RSSBytes)
		}
	}
	// Goroutines back to where they were before the daemon started (the goleak check above is the
	// strict version of this).
	if rep.Stopped.Goroutines > rep.Start.Goroutines {
		t.Logf("goroutines after stop %d, at start (daemon up) %d", rep.Stopped.Goroutines, rep.Start.Goroutines)
	}
	if rep.ActionsReceived+rep.Missed != steps {
		t.Errorf("actions %d + missed %d != steps %d", rep.ActionsReceived, rep.Missed, steps)
	}
	if rep.ActionsReceived < steps-steps/100 {
		t.Errorf("only %d of %d steps got an action", rep.ActionsReceived, steps)
	}
	if rep.DecisionDropped != 0 || rep.DecisionErrors != 0 {
		t.Errorf("decision log dropped %v, write errors %v", rep.DecisionDropped, rep.DecisionErrors)
	}
	if rep.DecisionRecords < float64(rep.ActionsReceived) {
		t.Errorf("decision log wrote %v records for %d actions", rep.DecisionRecords, rep.ActionsReceived)
	}
}
