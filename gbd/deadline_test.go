package gbd_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipopt"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/fault"
	"gbdmpc/plant/synthesis"
)

// Deadline overrun tests (doc.go, "Deadline rule"): every one runs on a fake clock that moves
// only when a fake back-end says time passed, so what the engine does after a limit is exact.

const ms = time.Millisecond

// timedNLP simulates Ipopt's timing around the real solver on a fake clock. A call spends setup
// before its first iteration callback, iterAt(k) on iteration k (iter when nil), and tail (or
// tails[call]) after its last callback. It calls opt.Stop at every callback, as Ipopt does, and
// returns UserRequestedStop when told to; after iters iterations it returns real Ipopt's answer
// (solved without the hook and CPU limit), its status replaced by script[call] when set. Calls
// are numbered from 1.
type timedNLP struct {
	clock             *fakeclock.Clock
	setup, iter, tail time.Duration
	iterAt            func(k int) time.Duration
	iters             int
	tails             map[int]time.Duration
	script            map[int]nlp.Status
	calls             int
}

func (n *timedNLP) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	n.calls++
	tail := n.tail
	if d, ok := n.tails[n.calls]; ok {
		tail = d
	}
	n.clock.Advance(n.setup)
	for k := 0; ; k++ {
		if opt.Stop != nil && opt.Stop() {
			n.clock.Advance(tail)
			return nlp.Result{Status: nlp.Stopped, X: append([]float64(nil), x0...), Iterations: k}, nil
		}
		if k == n.iters {
			break
		}
		d := n.iter
		if n.iterAt != nil {
			d = n.iterAt(k)
		}
		n.clock.Advance(d)
	}
	opt.Stop = nil
	res, err := ipopt.Solver{}.Solve(p, x0, opt)
	n.clock.Advance(tail)
	if st, ok := n.script[n.calls]; ok {
		res.Status = st
	}
	return res, err
}

func newFakeClock() *fakeclock.Clock { return fakeclock.New(time.Unix(1_700_000_000, 0)) }

// feasibleY is an assignment whose S(y) is feasible: the optimum of the fault instance.
func feasibleY(t *testing.T) []float64 {
	t.Helper()
	r, err := faultSolve(t, gbd.Engine{}, gbd.Settings{})
	if err != nil || r.Y == nil {
		t.Fatalf("reference solve: %v %v", err, r)
	}
	return r.Y
}

func newTimedSub(tn *timedNLP) *gbd.Subproblems {
	sp := gbd.NewSubproblems(synthesis.Problem(faultInstance), tn, nlp.Options{})
	sp.Clock = tn.clock
	return sp
}

// S(y) reports infeasible only after the limit (its finishing work ran past it): F(y) is not
// started. Before, F ran its set-up and first iteration past the limit and then was stopped.
func TestEvaluateStartsNoFAfterTheLimit(t *testing.T) {
	clock := newFakeClock()
	fn := &timedNLP{clock: clock, setup: ms, iter: ms, iters: 3, tail: 5 * ms,
		script: map[int]nlp.Status{1: nlp.Infeasible}}
	sp := newTimedSub(fn)
	start := clock.Now()
	_, err := sp.Evaluate(feasibleY(t), 6*ms)
	if !errors.Is(err, gbd.ErrTimeUp) {
		t.Fatalf("error %v, want ErrTimeUp", err)
	}
	if fn.calls != 1 {
		t.Errorf("%d NLP calls, want S only", fn.calls)
	}
	// S: set-up 1 ms, callbacks at 1, 2, 3, 4 ms, then 5 ms of finishing work.
	if got := clock.Now().Sub(start); got != 9*ms {
		t.Errorf("Evaluate took %v, want the 9 ms of S alone", got)
	}
}

// A monotone-barrier retry is not started after the limit: when F(y) proves y feasible after it
// (S(y) would be retried; before, the retry was started and stopped at once, and its
// UserRequestedStop was reported as a subproblem failure, StatusFailed), or when F(y) itself fails
// after it. The evaluation reports the time-up, having called S and F only.
func TestEvaluateStartsNoRetryAfterTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script map[int]nlp.Status
	}{
		{"S retry", map[int]nlp.Status{1: nlp.Infeasible}},
		{"F retry", map[int]nlp.Status{1: nlp.Infeasible, 2: nlp.Failed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			fn := &timedNLP{clock: clock, setup: ms, iter: ms, iters: 2,
				tails: map[int]time.Duration{2: 6 * ms}, script: tc.script}
			sp := newTimedSub(fn)
			_, err := sp.Evaluate(feasibleY(t), 10*ms)
			if !errors.Is(err, gbd.ErrTimeUp) {
				t.Fatalf("error %v, want ErrTimeUp (the retry had no time), not a failure", err)
			}
			if fn.calls != 2 {
				t.Errorf("%d NLP calls, want S and F without the retry", fn.calls)
			}
		})
	}
}

// An NLP that even the shortest set-up of the solve's earlier NLPs would take past the limit is not
// started: it would be stopped at its first callback having produced nothing. A slower set-up
// (a loaded machine) does not raise the estimate.
func TestEvaluateSkipsAnNLPItsSetupWouldOverrun(t *testing.T) {
	clock := newFakeClock()
	fn := &timedNLP{clock: clock, setup: 4 * ms, iter: ms, iters: 2}
	sp := newTimedSub(fn)
	y := feasibleY(t)
	if _, err := sp.Evaluate(y, time.Second); err != nil {
		t.Fatal(err)
	}
	fn.setup = 9 * ms
	if _, err := sp.Evaluate(y, time.Second); err != nil {
		t.Fatal(err)
	}
	t0 := clock.Now()
	_, err := sp.Evaluate(y, 4*ms)
	if !errors.Is(err, gbd.ErrTimeUp) {
		t.Fatalf("error %v, want ErrTimeUp", err)
	}
	if fn.calls != 2 || !clock.Now().Equal(t0) {
		t.Errorf("%d NLP calls and %v spent, want no third NLP and no time", fn.calls, clock.Now().Sub(t0))
	}
	// With room for the shortest set-up (4 ms) the NLP runs, and is stopped at its first
	// callback past the limit if its set-up is longer.
	_, err = sp.Evaluate(y, 5*ms)
	if !errors.Is(err, gbd.ErrTimeUp) || fn.calls != 3 || clock.Now().Sub(t0) != 9*ms {
		t.Errorf("with 5 ms: %v after %d calls and %v", err, fn.calls, clock.Now().Sub(t0))
	}
}

// The documented bound of one NLP: Ipopt is stopped at its first iteration callback at or past the
// limit, so the evaluation ends past the limit by less than one iteration plus Ipopt's work after
// that callback.
func TestEvaluateOverrunIsOneIteration(t *testing.T) {
	clock := newFakeClock()
	fn := &timedNLP{clock: clock, setup: ms, iter: 2 * ms, iters: 1000, tail: ms / 5}
	sp := newTimedSub(fn)
	start := clock.Now()
	limit := 8*ms + ms/2
	_, err := sp.Evaluate(feasibleY(t), limit)
	if !errors.Is(err, gbd.ErrTimeUp) {
		t.Fatalf("error %v, want ErrTimeUp", err)
	}
	// Callbacks at 1, 3, 5, 7, 9 ms: stopped at 9, back at 9.2.
	if got, want := clock.Now().Sub(start), 9*ms+ms/5; got != want {
		t.Errorf("Evaluate took %v, want %v (limit %v + under one 2 ms iteration + tail)", got, want, limit)
	}
}

// countingMaster counts what the engine asks of the master; solve, if set, replaces Solve.
type countingMaster struct {
	enum.Master
	resets, cuts, solves int
	solve                func(limit time.Duration, start []float64) (gbd.MasterResult, error)
}

func (m *countingMaster) Reset(ny int, pure []gbd.PureRow, ypb *gbd.Admissible) error {
	m.resets++
	return m.Master.Reset(ny, pure, ypb)
}

func (m *countingMaster) AddCut(c *gbd.Cut) { m.cuts++; m.Master.AddCut(c) }

func (m *countingMaster) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	m.solves++
	if m.solve != nil {
		return m.solve(limit, start)
	}
	return m.Master.Solve(limit, start)
}

// A solve whose deadline (less the margin) has passed when it is called does nothing: no master
// set-up with the carried cuts, no NLP. Before, it built the master and added every carried cut
// first.
func TestSolveAfterTheDeadlineDoesNoWork(t *testing.T) {
	p, ypb := synthesis.Problem(faultInstance), synthesis.Admissible()
	ref, err := faultSolve(t, gbd.Engine{}, gbd.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, left := range []time.Duration{-ms, 0, ms / 2, ms} {
		clock := newFakeClock()
		m := &countingMaster{}
		fn := &timedNLP{clock: clock, iters: 1}
		r, err := (&gbd.Engine{NLP: fn, Master: m, Clock: clock}).Solve(p, ypb,
			gbd.Settings{Deadline: clock.Now().Add(left), Cuts: ref.Cuts})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != gbd.StatusNoSolution || !strings.Contains(r.Message, "in time") {
			t.Errorf("%v left: %v %q, want no_solution in time", left, r.Status, r.Message)
		}
		if m.resets+m.cuts+m.solves+fn.calls != 0 {
			t.Errorf("%v left: %d resets, %d cuts, %d master solves, %d NLPs after the deadline", left, m.resets, m.cuts, m.solves, fn.calls)
		}
	}
	// Bad input is still an error, deadline or not.
	if _, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, ypb, gbd.Settings{Deadline: time.Unix(0, 0), Cuts: []gbd.Cut{{Coef: []float64{1}}}}); err == nil {
		t.Error("a carried cut of the wrong size was accepted")
	}
}

// The master returns an assignment already evaluated and is not proven optimal, after the deadline:
// the exact master it would be re-solved with is not started. Before, it was solved with a 1 µs
// limit (the CBC back-end still builds and presolves its MILP).
func TestNoExactMasterAfterTheDeadline(t *testing.T) {
	clock := newFakeClock()
	y0 := feasibleY(t)
	m := &countingMaster{}
	m.solve = func(time.Duration, []float64) (gbd.MasterResult, error) {
		clock.Advance(200 * ms)
		return gbd.MasterResult{Status: gbd.MasterStopped, Y: append([]float64(nil), y0...), Mu: 0, Bound: math.Inf(-1)}, nil
	}
	fn := &timedNLP{clock: clock, iters: 1}
	r, err := (&gbd.Engine{NLP: fn, Master: m, Clock: clock}).Solve(synthesis.Problem(faultInstance), synthesis.Admissible(),
		gbd.Settings{Deadline: clock.Now().Add(100 * ms), Y0: y0})
	checkFaultResult(t, r, err, gbd.StatusGap)
	if m.solves != 1 {
		t.Errorf("%d master solves, want 1: none after the deadline", m.solves)
	}
}

// The agent's proposal takes the rest of the budget: the master is not solved after it (its time
// limit would have come from the time left before the proposal).
func TestNoMasterAfterASlowProposal(t *testing.T) {
	clock := newFakeClock()
	m := &countingMaster{}
	fn := &timedNLP{clock: clock, iters: 1}
	eng := gbd.Engine{NLP: fn, Master: m, Policy: &fault.Policy{Clock: clock, Cost: 150 * ms}, Clock: clock}
	r, err := eng.Solve(synthesis.Problem(faultInstance), synthesis.Admissible(), gbd.Settings{Deadline: clock.Now().Add(100 * ms)})
	checkFaultResult(t, r, err, gbd.StatusGap, gbd.StatusNoSolution, gbd.StatusOptimal)
	if r.Status == gbd.StatusOptimal {
		t.Skip("the first subproblem closed the gap; nothing was proposed")
	}
	if m.solves != 0 || r.Agent.Proposed != 1 {
		t.Errorf("%d master solves after %d proposals, want none after the one that overran", m.solves, r.Agent.Proposed)
	}
}

// cyclingPolicy takes perCut of the fake clock per cut of the master (and one more) per proposal
// and proposes the assignments of Y_pb in turn; it records the time left before deadline and its
// own time at each call.
type cyclingPolicy struct {
	clock      *fakeclock.Clock
	perCut     time.Duration
	deadline   time.Time
	n          int
	left, took []time.Duration
}

func (p *cyclingPolicy) Propose(v *gbd.MasterView) (gbd.Proposal, error) {
	cost := p.perCut * time.Duration(len(v.Cuts)+1)
	p.left, p.took = append(p.left, p.deadline.Sub(p.clock.Now())), append(p.took, cost)
	p.clock.Advance(cost)
	l := make([]float64, v.Ypb.Count())
	l[p.n%len(l)] = 1
	p.n++
	return gbd.Proposal{Logits: l}, nil
}

// A proposal cannot be stopped, so none starts with less time left than twice what the slowest
// one per cut gives for the master's cuts: the solve goes on with exact masters and ends before its
// deadline. Without the rule the policy was asked until a proposal ended past the deadline.
func TestNoProposalThatCannotFinish(t *testing.T) {
	clock := newFakeClock()
	deadline := clock.Now().Add(100 * ms)
	pol := &cyclingPolicy{clock: clock, perCut: 5 * ms, deadline: deadline}
	m := &countingMaster{}
	m.solve = func(limit time.Duration, start []float64) (gbd.MasterResult, error) {
		if start != nil { // time-limited: stops at the proposal, proving nothing
			return gbd.MasterResult{Status: gbd.MasterStopped, Y: append([]float64(nil), start...),
				Mu: math.Inf(-1), Bound: math.Inf(-1)}, nil
		}
		return m.Master.Solve(limit, start)
	}
	fn := &timedNLP{clock: clock, iters: 1}
	eng := gbd.Engine{NLP: fn, Master: m, Policy: pol, Clock: clock}
	r, err := eng.Solve(synthesis.Problem(faultInstance), synthesis.Admissible(), gbd.Settings{Deadline: deadline})
	checkFaultResult(t, r, err, gbd.StatusOptimal, gbd.StatusGap)
	t.Logf("left at each proposal %v, its time %v", pol.left, pol.took)
	if len(pol.left) < 2 {
		t.Fatalf("%d proposals: the test needs the policy asked more than once", len(pol.left))
	}
	for i := 1; i < len(pol.left); i++ {
		if pol.left[i] < 2*pol.took[i] {
			t.Errorf("proposal %d started with %v left and took %v", i+1, pol.left[i], pol.took[i])
		}
	}
	if late := clock.Now().Sub(deadline); late > 0 {
		t.Errorf("solve ended %v after its deadline", late)
	}
	if r.Agent.Benched == 0 {
		t.Errorf("no benched master step: %+v", r.Agent)
	}
	if c := r.Proposal; c.Cuts == 0 || c.Time != 5*ms*time.Duration(c.Cuts+1) {
		t.Errorf("Proposal %+v, want the last proposal's cuts and 5 ms each (+1)", c)
	}
}

// Expected scales a measured proposal up by the cuts, up to four times as many; beyond it trusts
// only the measurement itself, so a fixed cost measured at a few cuts does not bench a fast policy
// on the carried cuts of the next step.
func TestProposalCostExpected(t *testing.T) {
	for _, tc := range []struct {
		c    gbd.ProposalCost
		cuts int
		want time.Duration
	}{
		{gbd.ProposalCost{}, 100, 0},
		{gbd.ProposalCost{Time: 10 * ms, Cuts: 9}, 4, 10 * ms},                   // fewer cuts: what was measured
		{gbd.ProposalCost{Time: 10 * ms, Cuts: 9}, 9, 10 * ms},                   //
		{gbd.ProposalCost{Time: 10 * ms, Cuts: 9}, 19, 20 * ms},                  // twice the cuts (+1)
		{gbd.ProposalCost{Time: 10 * ms, Cuts: 9}, 39, 40 * ms},                  // four times: still scaled
		{gbd.ProposalCost{Time: 10 * ms, Cuts: 9}, 40, 10 * ms},                  // beyond: measure again
		{gbd.ProposalCost{Time: 5 * ms, Cuts: 7}, 350, 5 * ms},                   // the structured agent's case
		{gbd.ProposalCost{Time: 200 * ms, Cuts: 100}, 365, 200 * ms * 366 / 101}, // the oracle's
	} {
		if got := tc.c.Expected(tc.cuts); got != tc.want {
			t.Errorf("%+v at %d cuts: %v, want %v", tc.c, tc.cuts, got, tc.want)
		}
	}
}

// Interrupt ends a solve as its deadline would: once it says so, the solve stops where it next
// looks at the time left, with its incumbent and a valid bound, with or without a deadline (a
// command's solve without one ends this way on a signal); before that it changes nothing.
func TestInterruptEndsTheSolveLikeItsDeadline(t *testing.T) {
	ref, err := faultSolve(t, gbd.Engine{}, gbd.Settings{})
	checkFaultResult(t, ref, err, gbd.StatusOptimal)
	far := time.Now().Add(time.Hour)
	for _, c := range []struct {
		name     string
		after    int // Interrupt says true from this call on (0: never)
		deadline bool
		want     gbd.Status
	}{
		{"never", 0, true, gbd.StatusOptimal},
		{"never, without a deadline", 0, false, gbd.StatusOptimal},
		{"after the first iteration", 3, true, gbd.StatusGap},
		{"after the first iteration, without a deadline", 3, false, gbd.StatusGap},
	} {
		calls := 0
		set := gbd.Settings{Interrupt: func() bool {
			calls++
			return c.after > 0 && calls >= c.after
		}}
		if c.deadline {
			set.Deadline = far
		}
		r, err := faultSolve(t, gbd.Engine{}, set)
		checkFaultResult(t, r, err, c.want)
		if c.want == gbd.StatusOptimal && (r.Iterations != ref.Iterations || math.Abs(r.UBD-ref.UBD) > 1e-9) {
			t.Errorf("%s: %d iterations, UBD %g; want the reference's %d, %g", c.name, r.Iterations, r.UBD, ref.Iterations, ref.UBD)
		}
		if c.want == gbd.StatusGap && r.Iterations >= ref.Iterations {
			t.Errorf("%s: %d iterations, the reference needs %d: the interrupt did not end the solve", c.name, r.Iterations, ref.Iterations)
		}
		if wantMsg := map[bool]string{true: "", false: "interrupted"}[c.deadline]; c.want == gbd.StatusGap && r.Message != wantMsg {
			t.Errorf("%s: message %q, want %q", c.name, r.Message, wantMsg)
		}
	}
}
