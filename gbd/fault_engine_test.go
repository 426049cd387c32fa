package gbd_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/agent"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/fault"
	"gbdmpc/plant/synthesis"
)

// Fault injection into the engine's two back-ends. Every fault must end the solve with a Status
// (never a panic, never a Go error: the input was fine) whose bounds still hold.

// faultInstance needs several GBD iterations, so a fault on the k-th NLP or master lands mid-solve.
var faultInstance = synthesis.Instance{V: 1, Gamma: []float64{10, 20, 15, 12, 4}, U: 10, Rho: []float64{1.5, 0.5}}

// checkFaultResult asserts what every faulted solve must give: no Go error, a status from the
// documented set, bounds in order, an incumbent exactly when the status promises one, and a
// message for anything that did not converge.
func checkFaultResult(t *testing.T, r *gbd.Result, err error, allowed ...gbd.Status) {
	t.Helper()
	if err != nil {
		t.Fatalf("Solve returned a Go error for a runtime fault: %v", err)
	}
	ok := false
	for _, s := range allowed {
		ok = ok || r.Status == s
	}
	if !ok {
		t.Fatalf("status %v (%s), want one of %v", r.Status, r.Message, allowed)
	}
	if r.LBD > r.UBD+1e-6*math.Max(1, math.Abs(r.UBD)) {
		t.Fatalf("LBD %g > UBD %g", r.LBD, r.UBD)
	}
	switch r.Status {
	case gbd.StatusOptimal, gbd.StatusGap:
		if r.Y == nil || math.IsInf(r.UBD, 0) {
			t.Fatalf("%v without an incumbent", r.Status)
		}
	case gbd.StatusFailed, gbd.StatusNoSolution:
		if r.Message == "" {
			t.Fatalf("%v without a message", r.Status)
		}
	}
}

func faultSolve(t *testing.T, e gbd.Engine, set gbd.Settings) (*gbd.Result, error) {
	t.Helper()
	if e.Master == nil {
		e.Master = &enum.Master{} // the master of these tests unless one is given
	}
	return e.Solve(synthesis.Problem(faultInstance), synthesis.Admissible(), set)
}

func TestFaultReferenceSolveNeedsSeveralNLPs(t *testing.T) {
	fn := &fault.NLP{}
	r, err := faultSolve(t, gbd.Engine{NLP: fn}, gbd.Settings{})
	checkFaultResult(t, r, err, gbd.StatusOptimal)
	if fn.Calls() < 3 || r.Iterations < 2 {
		t.Fatalf("reference solve used %d NLPs and %d iterations; the fault tests need a longer one", fn.Calls(), r.Iterations)
	}
}

// A solver error (the C call failed) on the k-th NLP: no valid cut, so the solve ends failed with
// the error in its message — also when an incumbent exists (the documented meaning of failed).
func TestFaultNLPErrorOnKthCall(t *testing.T) {
	boom := errors.New("injected: IpoptSolve crashed")
	for _, k := range []int{1, 2, 3} {
		fn := &fault.NLP{Fail: fault.Only(k), Err: boom}
		r, err := faultSolve(t, gbd.Engine{NLP: fn}, gbd.Settings{})
		checkFaultResult(t, r, err, gbd.StatusFailed)
		if !strings.Contains(r.Message, boom.Error()) {
			t.Errorf("k=%d: message %q does not carry the solver's error", k, r.Message)
		}
		if fn.Calls() != k {
			t.Errorf("k=%d: %d NLP calls; the engine went on after a failed NLP", k, fn.Calls())
		}
	}
}

// RestorationFailed once is an optimisation outcome, not an error: the engine falls back to F(y)
// and the monotone retry, and may still prove the optimum; sticky, it must end failed.
func TestFaultNLPRestorationFailed(t *testing.T) {
	ref, err := faultSolve(t, gbd.Engine{}, gbd.Settings{})
	checkFaultResult(t, ref, err, gbd.StatusOptimal)
	for _, k := range []int{1, 2, 3, 4} {
		fn := &fault.NLP{Fail: fault.Only(k), Status: nlp.Failed}
		r, err := faultSolve(t, gbd.Engine{NLP: fn}, gbd.Settings{})
		checkFaultResult(t, r, err, gbd.StatusOptimal, gbd.StatusFailed)
		if r.Status == gbd.StatusOptimal && !relClose(r.Objective, ref.Objective, 1e-4) {
			t.Errorf("k=%d once: optimal %g after one restoration failure, reference %g", k, r.Objective, ref.Objective)
		}
		fn = &fault.NLP{Fail: fault.From(k), Status: nlp.Failed}
		r, err = faultSolve(t, gbd.Engine{NLP: fn}, gbd.Settings{})
		checkFaultResult(t, r, err, gbd.StatusFailed)
		if !strings.Contains(r.Message, gbd.ErrSubproblem.Error()) {
			t.Errorf("k=%d sticky: message %q does not name the subproblem failure", k, r.Message)
		}
	}
}

// MaximumCpuTimeExceeded is the time budget running out: the solve stops with its incumbent (gap)
// or, before any, with no_solution — never failed.
func TestFaultNLPCPUTimeExceeded(t *testing.T) {
	for _, k := range []int{1, 2, 3, 4} {
		fn := &fault.NLP{Fail: fault.Only(k), Status: nlp.Stopped}
		r, err := faultSolve(t, gbd.Engine{NLP: fn}, gbd.Settings{})
		checkFaultResult(t, r, err, gbd.StatusGap, gbd.StatusNoSolution)
		if k == 1 && r.Status != gbd.StatusNoSolution {
			t.Errorf("k=1: %v, want no_solution (no NLP ever finished)", r.Status)
		}
	}
}

// A master that stops without an integer point (classical GBD has nothing to go on): the solve
// ends gap with its incumbent, LBD raised to the master's bound only.
func TestFaultMasterNoIncumbent(t *testing.T) {
	for _, k := range []int{1, 2} {
		m := &fault.Master{Fail: fault.Only(k)}
		r, err := faultSolve(t, gbd.Engine{Master: m}, gbd.Settings{})
		checkFaultResult(t, r, err, gbd.StatusGap, gbd.StatusOptimal)
		if m.Calls() != k && r.Status == gbd.StatusGap {
			t.Errorf("k=%d: %d master calls; the engine went on after no incumbent", k, m.Calls())
		}
	}
}

// With an agent, a no-incumbent master is what Algorithm 2 expects of a short time limit: the
// screened proposal is used and the solve goes on to the optimum.
func TestFaultMasterNoIncumbentWithAgent(t *testing.T) {
	ref, err := faultSolve(t, gbd.Engine{}, gbd.Settings{})
	checkFaultResult(t, ref, err, gbd.StatusOptimal)
	pol, err := agent.NewBuiltin("oracle", 1)
	if err != nil {
		t.Fatal(err)
	}
	m := &fault.Master{Fail: fault.From(1)}
	r, err := faultSolve(t, gbd.Engine{Master: m, Policy: pol}, gbd.Settings{})
	checkFaultResult(t, r, err, gbd.StatusOptimal, gbd.StatusGap)
	if r.Status == gbd.StatusOptimal && !relClose(r.Objective, ref.Objective, 1e-4) {
		t.Errorf("optimal %g with a no-incumbent master, reference %g", r.Objective, ref.Objective)
	}
}

func TestFaultMasterError(t *testing.T) {
	boom := errors.New("injected: CBC crashed")
	for _, k := range []int{1, 2} {
		m := &fault.Master{Fail: fault.Only(k), Err: boom}
		r, err := faultSolve(t, gbd.Engine{Master: m}, gbd.Settings{})
		checkFaultResult(t, r, err, gbd.StatusFailed, gbd.StatusOptimal)
		if r.Status == gbd.StatusFailed && !strings.Contains(r.Message, "master: "+boom.Error()) {
			t.Errorf("k=%d: message %q does not carry the master's error", k, r.Message)
		}
		if r.Status == gbd.StatusOptimal && m.Calls() >= k {
			t.Errorf("k=%d: optimal although the master failed at call %d of %d", k, k, m.Calls())
		}
	}
}

// A master slower than the whole deadline: the engine gives it the remaining time as its limit,
// starts no NLP after the deadline, and returns gap with the first incumbent at the first check.
func TestFaultMasterSlowerThanDeadline(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	deadline := clock.Now().Add(100 * time.Millisecond)
	fn := &fault.NLP{Clock: clock}
	m := &fault.Master{Clock: clock, Cost: 250 * time.Millisecond}
	r, err := faultSolve(t, gbd.Engine{NLP: fn, Master: m, Clock: clock}, gbd.Settings{Deadline: deadline})
	checkFaultResult(t, r, err, gbd.StatusGap, gbd.StatusNoSolution, gbd.StatusOptimal)
	if r.Status == gbd.StatusOptimal {
		t.Skip("the first subproblem closed the gap; no master was needed")
	}
	for _, at := range fn.Starts() {
		if !at.Before(deadline) {
			t.Errorf("an NLP started %v after the deadline", at.Sub(deadline))
		}
	}
	if m.Calls() != 1 {
		t.Errorf("%d master solves; the engine must stop after the one that overran", m.Calls())
	}
	for _, l := range m.Limits {
		if l <= 0 || l > 100*time.Millisecond {
			t.Errorf("master limit %v, want within the 100ms deadline", l)
		}
	}
	if want := 250 * time.Millisecond; r.Total != want {
		t.Errorf("Total %v, want %v: one NLP (no clock time) plus the overrunning master", r.Total, want)
	}
}
