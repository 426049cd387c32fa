package sim

import (
	"context"
	"testing"

	"gbdmpc/backend"
	"gbdmpc/mpc"
)

// BenchmarkClosedLoopDay runs the spec's 96-step day of the 12-binary station in closed loop with
// carried cuts and the default back-ends, as a daemon serves one plant: ms-per-step is the CPU a
// control step costs the daemon (the fleet's budget is cores × period ÷ this), iterations/step what
// GBD needed with the carried cuts.
func BenchmarkClosedLoopDay(b *testing.B) {
	steps, iters := 0, 0
	for b.Loop() {
		run, err := RunClosedLoop(context.Background(), LoopOptions{Sim: DefaultConfig(), Steps: 96,
			MPC: mpc.Options{NLP: backend.NLP()}})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range run.Steps {
			if r.Status != mpc.StatusOptimal {
				b.Fatalf("a step ended %s (%s)", r.Status, r.Reason)
			}
			iters += r.Iterations
		}
		steps += len(run.Steps)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(steps), "ms/step")
	b.ReportMetric(float64(iters)/float64(steps), "iterations/step")
}
