package mpc

import (
	"math"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/fault"
)

// softToy is a toy measurement with a soft version whose verdicts are test inputs: the pre-check's
// reason, whether a soft solution breaks the limits, and the bound.
type softToy struct {
	toyMeas
	unholdable string
	violated   bool
	bound      float64
}

func (m softToy) Unholdable() string { return m.unholdable }
func (m softToy) SoftProblem() (*gbd.Problem, float64, error) {
	p, err := m.toyMeas.Problem()
	return p, m.bound, err
}
func (m softToy) SoftStart(x []float64) []float64 { return x }
func (m softToy) Relaxation([]float64) (Relaxation, bool) {
	return Relaxation{Limit: "x_max", MaxViolation: 0.5, Shortfall: "x above its limit"}, m.violated
}

// scripted answers each kind of problem with a given result and remembers the deadline it got.
type scripted struct {
	res       map[ProblemKind]*gbd.Result
	deadlines map[ProblemKind]time.Time
	order     []ProblemKind
	clock     *fakeclock.Clock
	takes     time.Duration // each solve moves the clock on by this much
}

func (s *scripted) solve(kind ProblemKind, _ *gbd.Problem, set gbd.Settings) (*gbd.Result, error) {
	s.deadlines[kind] = set.Deadline
	s.order = append(s.order, kind)
	s.clock.Advance(s.takes)
	return s.res[kind], nil
}

func incumbent(st gbd.Status, lbd float64) *gbd.Result {
	return &gbd.Result{Status: st, Y: []float64{1, 0}, X: []float64{3}, Objective: 7, LBD: lbd, UBD: 7}
}

var (
	infeasible = &gbd.Result{Status: gbd.StatusInfeasible, Objective: math.Inf(1), LBD: math.Inf(-1), UBD: math.Inf(1), Message: "cuts exclude every y"}
	noSolution = &gbd.Result{Status: gbd.StatusNoSolution, Objective: math.Inf(1), LBD: math.Inf(-1), UBD: math.Inf(1)}
)

// TestSolveSharesTheDeadline: a conclusive pre-check gives the soft problem the whole time and
// solves no hard problem; otherwise the hard problem gets HardFrac of the time left and the soft
// one, if needed, the rest up to the step's deadline. A family without a soft version keeps the
// whole time for its one problem, and its infeasibility stays plain infeasibility.
func TestSolveSharesTheDeadline(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	deadline := t0.Add(800 * time.Millisecond)
	newScript := func() *scripted {
		clock := fakeclock.New(t0)
		return &scripted{res: map[ProblemKind]*gbd.Result{Hard: infeasible, Soft: incumbent(gbd.StatusOptimal, 7)},
			deadlines: map[ProblemKind]time.Time{}, clock: clock, takes: 100 * time.Millisecond}
	}

	s := newScript()
	out, err := Solve(softToy{toyMeas: 2, unholdable: "cannot reach", violated: true}, gbd.Settings{Deadline: deadline}, 0.5, s.clock, s.solve)
	if err != nil || len(s.order) != 1 || s.order[0] != Soft || !s.deadlines[Soft].Equal(deadline) {
		t.Fatalf("pre-check: %v, solves %v, soft deadline %v", err, s.order, s.deadlines[Soft])
	}
	if out.Relaxed == nil || out.Relaxed.Proof != ProofPrecheck || out.Relaxed.ProofDetail != "cannot reach" || out.Hard != nil ||
		out.Kind != Soft || out.Result != out.Soft || out.Infeasible != ProofPrecheck {
		t.Errorf("pre-check outcome %+v", out)
	}

	s = newScript()
	out, err = Solve(softToy{toyMeas: 2, violated: true}, gbd.Settings{Deadline: deadline}, 0.25, s.clock, s.solve)
	if err != nil || len(s.order) != 2 || s.order[0] != Hard || s.order[1] != Soft {
		t.Fatalf("hard then soft: %v, solves %v", err, s.order)
	}
	if want := t0.Add(200 * time.Millisecond); !s.deadlines[Hard].Equal(want) || !s.deadlines[Soft].Equal(deadline) {
		t.Errorf("deadlines hard %v, soft %v; want %v and %v", s.deadlines[Hard], s.deadlines[Soft], want, deadline)
	}
	if out.Relaxed == nil || out.Relaxed.Proof != ProofGBD || out.Relaxed.ProofDetail != infeasible.Message || out.Hard != infeasible {
		t.Errorf("GBD-proven outcome %+v", out)
	}

	// A hard incumbent ends it: no soft solve.
	s = newScript()
	s.res[Hard] = incumbent(gbd.StatusGap, 6)
	out, err = Solve(softToy{toyMeas: 2}, gbd.Settings{Deadline: deadline}, 0.5, s.clock, s.solve)
	if err != nil || len(s.order) != 1 || out.Result != s.res[Hard] || out.Relaxed != nil || out.Soft != nil {
		t.Errorf("hard incumbent: %v, solves %v, outcome %+v", err, s.order, out)
	}

	// No deadline: nothing to share.
	s = newScript()
	if _, err := Solve(softToy{toyMeas: 2, violated: true}, gbd.Settings{}, 0.5, s.clock, s.solve); err != nil ||
		!s.deadlines[Hard].IsZero() || !s.deadlines[Soft].IsZero() {
		t.Errorf("no deadline: %v, deadlines %v", err, s.deadlines)
	}

	// Without a soft version: the whole time, and infeasible stays infeasible.
	s = newScript()
	out, err = Solve(toyMeas(2), gbd.Settings{Deadline: deadline}, 0.5, s.clock, s.solve)
	if err != nil || len(s.order) != 1 || !s.deadlines[Hard].Equal(deadline) || out.Result != infeasible ||
		out.Relaxed != nil || out.Infeasible != "" {
		t.Errorf("plain family: %v, solves %v, outcome %+v", err, s.order, out)
	}
}

// TestSolveWithoutAProof: when the hard solve ends without a plan but without proving
// infeasibility (its share of the time ran out), the soft solve decides: a plan within the limits
// is the hard problem's incumbent, a soft lower bound above the bound proves infeasibility, and
// anything else is reported as unproven, with no plan to act on.
func TestSolveWithoutAProof(t *testing.T) {
	for _, tc := range []struct {
		name     string
		violated bool
		lbd      float64
		relaxed  string // proof, "" none
		acted    bool   // the soft result is the one to act on
	}{
		{"within the limits", false, 5, "", true},
		{"soft bound", true, 120, ProofSoftBound, true},
		{"unproven", true, 50, "", false},
	} {
		clock := fakeclock.New(time.Unix(1_700_000_000, 0))
		s := &scripted{res: map[ProblemKind]*gbd.Result{Hard: noSolution, Soft: incumbent(gbd.StatusGap, tc.lbd)},
			deadlines: map[ProblemKind]time.Time{}, clock: clock}
		out, err := Solve(softToy{toyMeas: 2, violated: tc.violated, bound: 100}, gbd.Settings{}, 0.5, clock, s.solve)
		if err != nil || len(s.order) != 2 {
			t.Fatalf("%s: %v, solves %v", tc.name, err, s.order)
		}
		if (out.Result == out.Soft) != tc.acted || (out.Relaxed != nil) != (tc.relaxed != "") || out.Infeasible != tc.relaxed {
			t.Errorf("%s: outcome %+v", tc.name, out)
		}
		if tc.relaxed != "" && (out.Relaxed.Proof != tc.relaxed || !strings.Contains(out.Relaxed.ProofDetail, "exceeds")) {
			t.Errorf("%s: relaxation %+v", tc.name, out.Relaxed)
		}
		if !tc.acted && out.Note == "" {
			t.Errorf("%s: no note on why the soft solution is not used", tc.name)
		}
	}

	// Proven infeasible, but the soft solve ran out of time too: no plan, the proof kept.
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	s := &scripted{res: map[ProblemKind]*gbd.Result{Soft: noSolution}, deadlines: map[ProblemKind]time.Time{}, clock: clock}
	out, err := Solve(softToy{toyMeas: 2, unholdable: "no way"}, gbd.Settings{}, 0.5, clock, s.solve)
	if err != nil || out.Infeasible != ProofPrecheck || out.Relaxed != nil || out.Result != noSolution ||
		!strings.Contains(out.Note, "hard limits cannot be held (precheck)") {
		t.Errorf("soft without a plan: %v, %+v", err, out)
	}
}

// TestStepRelaxedWithTheToy runs the two-phase solve through the controller on real solves of the
// toy: an unholdable measurement gives a relaxed decision from the soft solve, its cuts are pooled
// for soft problems only, and a holdable one afterwards solves the hard problem with the hard
// pool, untouched by the soft step.
func TestStepRelaxedWithTheToy(t *testing.T) {
	c, err := NewController(newToy(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Step(toyMeas(3), far())
	if err != nil || d.Relaxed != nil || d.Kind != Hard || d.Soft != nil {
		t.Fatalf("hard step: %v %+v", err, d)
	}
	hardPool := c.pools[Hard].Len()
	d, err = c.Step(softToy{toyMeas: 3, unholdable: "test", violated: true, bound: 1}, far())
	if err != nil || d.Relaxed == nil || d.Kind != Soft || d.Hard != nil || d.Status != StatusOptimal ||
		!strings.HasPrefix(d.Reason, "hard limits cannot be held: ") {
		t.Fatalf("soft step: %v %+v", err, d)
	}
	if d.Carry.Pooled != 0 {
		t.Errorf("the soft solve was offered %d pooled cuts: the hard pool leaked into it", d.Carry.Pooled)
	}
	if c.pools[Hard].Len() != hardPool || c.pools[Soft].Len() == 0 {
		t.Errorf("pools after the soft step: hard %d (was %d), soft %d", c.pools[Hard].Len(), hardPool, c.pools[Soft].Len())
	}
	d, err = c.Step(toyMeas(3), far())
	if err != nil || d.Relaxed != nil || d.Carry.Pooled != hardPool {
		t.Errorf("hard step after the soft one: %v, carry %+v (hard pool %d)", err, d.Carry, hardPool)
	}
}

func TestHardFracChecked(t *testing.T) {
	for _, f := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := NewController(newToy(t), Options{HardFrac: f}); err == nil {
			t.Errorf("HardFrac %v accepted", f)
		}
	}
}

// TestHardShareOnlyInDoubt: a normal step gives the hard problem the whole time; a step after one
// that could not hold the limits gives it HardFrac of the time, and the step after that, whose hard
// solve found a plan, the whole time again. The clock stands still, so the engine's NLP limit is
// exactly the time to the hard solve's deadline less the 1 ms margin.
func TestHardShareOnlyInDoubt(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	ln := &fault.NLP{Clock: clock}
	c, err := NewController(newToy(t), Options{Clock: clock, NLP: ln, HardFrac: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	deadline := clock.Now().Add(800 * time.Millisecond)
	holdable := softToy{toyMeas: 3}
	for i, st := range []struct {
		m       Measurement
		limit   float64 // of the step's first NLP
		relaxed bool
	}{
		{holdable, 0.799, false},
		{softToy{toyMeas: 3, unholdable: "test", violated: true, bound: 1}, 0.799, true}, // soft only, the whole time
		{holdable, 0.199, false},
		{holdable, 0.799, false},
	} {
		ln.Reset()
		d, err := c.Step(st.m, deadline)
		if err != nil || d.Status == StatusFallback || (d.Relaxed != nil) != st.relaxed {
			t.Fatalf("step %d: %v, %+v", i, err, d)
		}
		if lims := ln.Limits(); len(lims) == 0 || math.Abs(lims[0].Seconds()-st.limit) > 1e-9 {
			t.Errorf("step %d: first NLP limits %v, want %v s", i, lims, st.limit)
		}
	}
}
