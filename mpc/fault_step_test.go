package mpc_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/fault"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/synthesis"
)

// Fault injection below the controller: whatever the NLP solver or the master does, Step returns a
// usable Decision — the solve's answer, or a fallback with a reason — and never an error.

// healthyStep makes a synthesis controller on solver and takes one step, which must end optimal
// (the solver's fault is not armed yet); it returns the controller, the measurement and the step.
func healthyStep(t *testing.T, solver nlp.Solver) (*mpc.Controller, mpc.Measurement, mpc.Decision) {
	t.Helper()
	fam := synthesis.NewFamily()
	ctrl, err := mpc.NewController(fam, mpc.Options{NLP: solver})
	if err != nil {
		t.Fatal(err)
	}
	m := synthesisMeasurement(t, fam)
	good, err := ctrl.Step(m, time.Now().Add(time.Minute))
	if err != nil || good.Status != mpc.StatusOptimal {
		t.Fatalf("healthy step: %s %v (%s)", good.Status, err, good.Reason)
	}
	return ctrl, m, good
}

func synthesisMeasurement(t *testing.T, fam *synthesis.MPCFamily) mpc.Measurement {
	t.Helper()
	m, err := fam.DecodeMeasurement([]byte(`{"v":1,"seq":1,"ts_ms":1700000000000,"gamma":[10,20,15,12,4],"U":10,"rho":[1.5,0.5]}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func checkFallback(t *testing.T, d mpc.Decision, err error, reasonHas string) {
	t.Helper()
	if err != nil {
		t.Fatalf("Step returned an error for a solver fault: %v", err)
	}
	if d.Status != mpc.StatusFallback || d.Reason == "" || len(d.Apply) == 0 {
		t.Fatalf("got %s apply=%s reason %q, want a fallback with an action and a reason", d.Status, d.Apply, d.Reason)
	}
	if !strings.Contains(d.Reason, reasonHas) {
		t.Errorf("reason %q does not mention %q", d.Reason, reasonHas)
	}
	if !math.IsInf(d.Objective, 1) {
		t.Errorf("fallback objective %v, want +Inf (no certified solution)", d.Objective)
	}
}

// TestFaultStepNLPFaults: each NLP failure mode, with the synthesis family (whose plan never runs
// out): one good step, then a failing one falls back to the previous design with the failure as
// the reason, then the next good step recovers.
func TestFaultStepNLPFaults(t *testing.T) {
	cases := []struct {
		name   string
		fn     *fault.NLP
		reason string
	}{
		{"error", &fault.NLP{Err: errors.New("injected: IpoptSolve crashed")}, "injected: IpoptSolve crashed"},
		{"restoration_failed", &fault.NLP{Status: nlp.Failed}, "failed"},
		{"cpu_time", &fault.NLP{Status: nlp.Stopped}, "no_solution"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctrl, m, good := healthyStep(t, c.fn)
			c.fn.Arm(true)
			d, err := ctrl.Step(m, time.Now().Add(time.Minute))
			checkFallback(t, d, err, c.reason)
			if d.Safe || string(d.Apply) != string(good.Apply) || d.Fallbacks != 1 {
				t.Errorf("fallback applied %s (safe %v, fallbacks %d), want the previous design %s", d.Apply, d.Safe, d.Fallbacks, good.Apply)
			}
			c.fn.Arm(false)
			d, err = ctrl.Step(m, time.Now().Add(time.Minute))
			if err != nil || d.Status != mpc.StatusOptimal || d.Fallbacks != 0 {
				t.Errorf("recovery: %s %v (%s), fallbacks %d", d.Status, err, d.Reason, d.Fallbacks)
			}
		})
	}
}

// TestFaultStepPumpStationFailsForAWhile: the pump station keeps publishing the shifted plan for
// SafeAfter periods of failing solves, then the configured safe action, and recovers.
func TestFaultStepPumpStationFailsForAWhile(t *testing.T) {
	if testing.Short() {
		t.Skip("two pump-station solves")
	}
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	fn := &fault.NLP{Err: errors.New("injected: solver down")}
	ctrl, err := mpc.NewController(fam, mpc.Options{NLP: fn, SafeAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := fam.Config()
	in := pumpstation.SampleAt(rand.New(rand.NewPCG(5, 6)), &c, ptrTo(pumpstation.DefaultProfile()), 6)
	m, err := fam.Measure(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctrl.Step(m, time.Now().Add(time.Minute))
	if err != nil || (d.Status != mpc.StatusOptimal && d.Status != mpc.StatusGap) {
		t.Fatalf("healthy step: %s %v (%s)", d.Status, err, d.Reason)
	}
	fn.Arm(true)
	for i := 1; i <= 4; i++ {
		d, err = ctrl.Step(m, time.Now().Add(time.Minute))
		checkFallback(t, d, err, "injected: solver down")
		if safe := i > 2; d.Safe != safe || d.Fallbacks != i {
			t.Errorf("failing step %d: safe %v fallbacks %d, want safe %v", i, d.Safe, d.Fallbacks, safe)
		}
		if want := fam.SafeActionFor(m); d.Safe && string(d.Apply) != string(want) {
			t.Errorf("failing step %d: applied %s, want the safe action for the measurement %s", i, d.Apply, want)
		}
	}
	fn.Arm(false)
	d, err = ctrl.Step(m, time.Now().Add(time.Minute))
	if err != nil || (d.Status != mpc.StatusOptimal && d.Status != mpc.StatusGap) || d.Fallbacks != 0 {
		t.Errorf("recovery: %s %v (%s)", d.Status, err, d.Reason)
	}
}

// faultMaster answers every solve with an error or, when err is nil, with no incumbent.
type faultMaster struct {
	enum.Master
	err error
}

func (m *faultMaster) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	r, err := m.Master.Solve(limit, start)
	if err != nil {
		return r, err
	}
	if m.err != nil {
		return gbd.MasterResult{}, m.err
	}
	return gbd.MasterResult{Status: gbd.MasterNoIncumbent, Mu: math.Inf(1), Bound: math.Min(r.Bound, r.Mu)}, nil
}

// TestFaultStepMaster: a master that fails after the first subproblem's incumbent leaves that
// incumbent, published as gap with the master's error as the reason; a master that never finds an
// integer point leaves it too, published as gap.
func TestFaultStepMaster(t *testing.T) {
	fam := synthesis.NewFamily()
	m := synthesisMeasurement(t, fam)

	boom := errors.New("injected: CBC crashed")
	ctrl, err := mpc.NewController(fam, mpc.Options{NewMaster: func() gbd.Master { return &faultMaster{err: boom} }})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctrl.Step(m, time.Now().Add(time.Minute))
	if d.Result != nil && d.Result.Status == gbd.StatusOptimal {
		t.Skip("the first subproblem closed the gap; no master was solved")
	}
	if err != nil || d.Status != mpc.StatusGap || d.Y == nil || !strings.Contains(d.Reason, "master: "+boom.Error()) || d.Safe {
		t.Errorf("failing master: %s %v y=%v (%s), want gap with the first incumbent and the master's error", d.Status, err, d.Y, d.Reason)
	}

	ctrl, err = mpc.NewController(fam, mpc.Options{NewMaster: func() gbd.Master { return &faultMaster{} }})
	if err != nil {
		t.Fatal(err)
	}
	d, err = ctrl.Step(m, time.Now().Add(time.Minute))
	if err != nil || d.Status != mpc.StatusGap || d.Y == nil || !(d.LBD <= d.UBD) {
		t.Errorf("no-incumbent master: %s %v y=%v lbd %v ubd %v (%s), want gap with the first incumbent", d.Status, err, d.Y, d.LBD, d.UBD, d.Reason)
	}
}

// TestFaultStepSlowMaster: a master slower than the step's deadline. The step comes back right
// after the overrunning master (no further NLP or master), as gap with the incumbent it had, or as
// a fallback when the deadline leaves no time at all.
func TestFaultStepSlowMaster(t *testing.T) {
	fam := synthesis.NewFamily()
	m := synthesisMeasurement(t, fam)
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	master := &fault.Master{Clock: clock, Cost: 300 * time.Millisecond}
	ctrl, err := mpc.NewController(fam, mpc.Options{Clock: clock, NewMaster: func() gbd.Master { return master }})
	if err != nil {
		t.Fatal(err)
	}
	deadline := clock.Now().Add(200 * time.Millisecond)
	d, err := ctrl.Step(m, deadline)
	if err != nil {
		t.Fatal(err)
	}
	if d.Result != nil && d.Result.Status == gbd.StatusOptimal && master.Calls() == 0 {
		t.Skip("the first subproblem closed the gap; no master was solved")
	}
	if d.Status != mpc.StatusGap || d.Y == nil || d.Result.Status != gbd.StatusGap {
		t.Errorf("got %s (%s), want gap with the first incumbent", d.Status, d.Reason)
	}
	if master.Calls() != 1 {
		t.Errorf("%d master solves after the deadline had passed", master.Calls())
	}
	if got, want := d.SolveSeconds, master.Cost.Seconds(); math.Abs(got-want) > 1e-9 {
		t.Errorf("step took %vs of the fake clock, want %vs: nothing after the overrunning master", got, want)
	}

	// A deadline already behind us: no solve starts at all, and the previous design is kept.
	d, err = ctrl.Step(m, clock.Now().Add(-time.Millisecond))
	checkFallback(t, d, err, "no_solution")
	if master.Calls() != 1 {
		t.Errorf("a master was solved after the deadline")
	}
}

// TestFaultStepSolverBreaksAfterAnIncumbent: the NLP solver breaks in the middle of a solve, after
// the first subproblem gave a feasible point. The engine reports failed, but its incumbent is
// feasible and its lower bound valid, so the plant gets the incumbent as a gap result (with the
// failure as the reason) instead of a fallback; the bounds bracket the true optimum.
func TestFaultStepSolverBreaksAfterAnIncumbent(t *testing.T) {
	fn := &fault.NLP{Err: errors.New("injected: solver broke mid-solve")}
	ctrl, m, good := healthyStep(t, fn)
	// The next step starts from the previous design (feasible): one NLP, then the solver breaks.
	fn.Fail = fault.From(2)
	fn.Reset()
	d, err := ctrl.Step(m, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != mpc.StatusGap || d.Safe || d.Fallbacks != 0 || !strings.Contains(d.Reason, "solver broke mid-solve") {
		t.Fatalf("got %s (safe %v, fallbacks %d, reason %q), want the incumbent as a gap result", d.Status, d.Safe, d.Fallbacks, d.Reason)
	}
	if d.Result == nil || d.Result.Status != gbd.StatusFailed {
		t.Errorf("engine status %v, want failed", d.Result)
	}
	if !(d.LBD <= good.Objective+1e-6 && good.Objective <= d.UBD+1e-6) || math.IsInf(d.UBD, 0) {
		t.Errorf("bounds [%v, %v] do not bracket the optimum %v", d.LBD, d.UBD, good.Objective)
	}

	// With no incumbent (the very first NLP fails) it is still a fallback.
	fn.Fail = fault.From(1)
	fn.Reset()
	d, err = ctrl.Step(m, time.Now().Add(time.Minute))
	checkFallback(t, d, err, "solver broke mid-solve")
}
