package mpc_test

import (
	"math"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/fault"
	"gbdmpc/mpc"
	"gbdmpc/plant/synthesis"
)

// TestStepAfterItsDeadlineCarriesNothing: a step whose deadline has passed when it starts (a
// measurement that waited in the daemon's mailbox) re-evaluates no carried cut and starts no NLP.
// Before, it re-evaluated the whole pool (about 8 ms for the pump station) and then returned.
func TestStepAfterItsDeadlineCarriesNothing(t *testing.T) {
	fam := synthesis.NewFamily()
	m := synthesisMeasurement(t, fam)
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	fn := &fault.NLP{}
	ctrl, err := mpc.NewController(fam, mpc.Options{Clock: clock, NLP: fn})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ctrl.Step(m, clock.Now().Add(time.Hour)); err != nil || d.Status != mpc.StatusOptimal {
		t.Fatalf("first step: %v %s", err, d.Status)
	}
	calls := fn.Calls()
	d, err := ctrl.Step(m, clock.Now().Add(-time.Millisecond))
	checkFallback(t, d, err, "no_solution")
	if d.Carry.Pooled == 0 || d.Carry.TimedOut != d.Carry.Pooled || d.Carry.Carried != 0 {
		t.Errorf("carry %+v, want every pooled cut timed out", d.Carry)
	}
	if fn.Calls() != calls {
		t.Errorf("%d NLPs after the deadline", fn.Calls()-calls)
	}
}

// TestCarryTakesItsShareOfTheBudget: re-evaluating carried cuts stops at Options.CarryFrac of the
// time left when the step starts; the solve gets the rest. One clock reading per cut here (one
// worker), 1 ms each, 40 ms to the deadline: about 10 cuts at the default 0.25.
func TestCarryTakesItsShareOfTheBudget(t *testing.T) {
	fam := synthesis.NewFamily()
	m := synthesisMeasurement(t, fam)
	for _, frac := range []float64{0, 0.5} {
		clock := fakeclock.Ticking(time.Unix(1_700_000_000, 0), time.Millisecond)
		// The synthesis's cuts are never separable, so every entry is idle: keep them all here,
		// in a pool large enough to outlast the budget (its enum master's default keeps 16).
		ctrl, err := mpc.NewController(fam, mpc.Options{Clock: clock, CarryWorkers: 1, CarryFrac: frac, CarryEvictIdle: -1,
			CarryPool: gbd.DefaultPoolSize})
		if err != nil {
			t.Fatal(err)
		}
		for range 6 { // no deadline: every cut is carried, and the pool fills
			if d, err := ctrl.Step(m, time.Time{}); err != nil || d.Carry.TimedOut != 0 {
				t.Fatalf("step without deadline: %v, carry %+v", err, d.Carry)
			}
		}
		d, err := ctrl.Step(m, clock.Now().Add(40*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		share := 40 * mpc.DefaultCarryFrac
		if frac > 0 {
			share = 40 * frac
		}
		done := d.Carry.Candidates - d.Carry.TimedOut
		if d.Carry.TimedOut == 0 || float64(done) > share || float64(done) < share-4 {
			t.Errorf("CarryFrac %v: %+v: %d cuts re-evaluated, want about %.0f (1 ms each of 40 ms)", frac, d.Carry, done, share)
		}
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := mpc.NewController(fam, mpc.Options{CarryFrac: bad}); err == nil {
			t.Errorf("CarryFrac %v accepted", bad)
		}
	}
	if _, err := mpc.NewController(fam, mpc.Options{CarryEvictIdle: -2}); err == nil {
		t.Error("CarryEvictIdle −2 accepted")
	}
}
