package gbd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/plant/synthesis"
)

// TestAgentBuiltinPoliciesReachClassicalOptimum is the paper's guarantee (Section IV): whatever the
// agent proposes, Algorithm 2 returns the classical GBD optimum.
func TestAgentBuiltinPoliciesReachClassicalOptimum(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 15
	}
	rng := rand.New(rand.NewPCG(4, 2))
	ypb := synthesis.Admissible()
	for i := range n {
		in := synthesis.SampleFeasible(rng)
		p := synthesis.Problem(in)
		classic, err := (&gbd.Engine{}).Solve(p, ypb, gbd.Settings{})
		if err != nil || classic.Status != gbd.StatusOptimal {
			t.Fatalf("instance %d: classical GBD: %v %v", i, err, classic.Status)
		}
		for _, name := range gbd.BuiltinNames() {
			for mname, mk := range masters() {
				pol, err := gbd.NewBuiltin(name, uint64(i))
				if err != nil {
					t.Fatal(err)
				}
				label := fmt.Sprintf("instance %d/%s/%s", i, name, mname)
				r, err := (&gbd.Engine{Master: mk(), Policy: pol}).Solve(p, ypb, gbd.Settings{})
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if r.Status != gbd.StatusOptimal {
					t.Fatalf("%s: status %s (%s)", label, r.Status, r.Message)
				}
				if !relClose(r.Objective, classic.Objective, 1e-6) || fmt.Sprint(r.Y) != fmt.Sprint(classic.Y) {
					t.Fatalf("%s: y=%v obj=%.10g, classical y=%v obj=%.10g", label, r.Y, r.Objective, classic.Y, classic.Objective)
				}
				checkAcceptanceLogic(t, label, name, r)
			}
		}
	}
}

// checkAcceptanceLogic reads the per-iteration trace against Algorithm 2's rules.
func checkAcceptanceLogic(t *testing.T, label, policy string, r *gbd.Result) {
	t.Helper()
	st := gbd.AgentStats{}
	for _, it := range r.Trace {
		if it.Master == 0 {
			continue // converged right after the subproblem
		}
		st.Proposed++
		switch it.Outcome {
		case gbd.OutcomeInfeasible:
			if it.Tk != 0 {
				t.Fatalf("%s: iteration %d: a rejected proposal must lead to an exact master, got T_k = %v", label, it.K, it.Tk)
			}
		case gbd.OutcomeAccepted:
			st.Feasible++
			st.Accepted++
			if policy == "infeasible" && violatesAny(r.Cuts[:countCuts(r, it.K)], it.Next) {
				t.Fatalf("%s: iteration %d: accepted an assignment that violates a feasibility cut", label, it.K)
			}
		case gbd.OutcomeReplaced:
			st.Feasible++
			st.SolverSelected++
			if policy == "oracle" {
				t.Fatalf("%s: iteration %d: the oracle's proposal was replaced", label, it.K)
			}
		default:
			t.Fatalf("%s: iteration %d: outcome %q", label, it.K, it.Outcome)
		}
	}
	if st != r.Agent {
		t.Fatalf("%s: trace counts %+v, result %+v", label, st, r.Agent)
	}
	if policy == "oracle" && r.Agent.Accepted != r.Agent.Proposed {
		t.Fatalf("%s: oracle accepted %d of %d", label, r.Agent.Accepted, r.Agent.Proposed)
	}
}

// countCuts is how many cuts existed when iteration k's master was solved.
func countCuts(r *gbd.Result, k int) int {
	n := 0
	for _, c := range r.Cuts {
		if c.Carried || c.Iter <= k {
			n++
		}
	}
	return n
}

func violatesAny(cuts []gbd.Cut, y []float64) bool {
	for _, c := range cuts {
		if c.Kind == gbd.FeasibilityCut && c.Eval(y) > gbd.FeasTol {
			return true
		}
	}
	return false
}

// stepClock is a fake clock that moves forward by step at every reading, so a solve's time is a
// deterministic function of the number of clock readings.
type stepClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// limitRecorder wraps a master and records each solve's time limit and the clock at the call.
type limitRecorder struct {
	gbd.Master
	clock  gbd.Clock
	limits []time.Duration
	at     []time.Time
}

func (l *limitRecorder) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	l.limits = append(l.limits, limit)
	l.at = append(l.at, l.clock.Now())
	return l.Master.Solve(limit, start)
}

// TestDeadlineBudgetRule checks the documented rule with a fake clock: every master limit is within
// [T_min', T_max'] where both are capped by fractions of the time left, and the solve stops at the
// deadline with the best incumbent and a certified gap.
func TestDeadlineBudgetRule(t *testing.T) {
	ypb := synthesis.Admissible()
	rng := rand.New(rand.NewPCG(9, 9))
	in := synthesis.SampleFeasible(rng)
	p := synthesis.Problem(in)
	pol, _ := gbd.NewBuiltin("random", 1)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, budget := range []time.Duration{5 * time.Millisecond, 40 * time.Millisecond, time.Second} {
		clock := &stepClock{now: start, step: time.Millisecond}
		rec := &limitRecorder{Master: &gbd.EnumMaster{}, clock: clock}
		set := gbd.Settings{Deadline: start.Add(budget), TMin: 10 * time.Millisecond, TMax: 50 * time.Millisecond}
		r, err := (&gbd.Engine{Master: rec, Policy: pol, Clock: clock}).Solve(p, ypb, set)
		margin := time.Millisecond // the default Budget.Margin
		if err != nil {
			t.Fatal(err)
		}
		tk := map[time.Duration]bool{}
		for _, it := range r.Trace {
			if it.Tk > 0 {
				tk[it.Tk] = true
			}
		}
		for i, lim := range rec.limits {
			if lim == 0 {
				t.Errorf("budget %v: solve %d has no time limit although the solve has a deadline", budget, i)
				continue
			}
			// The limit was computed from the time left a few clock readings before the call.
			remBefore := set.Deadline.Sub(rec.at[i]) - margin + 3*clock.step
			if lim > remBefore {
				t.Errorf("budget %v: solve %d: limit %v runs past the deadline (%v left)", budget, i, lim, remBefore)
			}
			if tk[lim] && (lim > time.Duration(0.5*float64(remBefore)) || lim > set.TMax) {
				t.Errorf("budget %v: solve %d: T_k %v exceeds min(T_max, 0.5·%v)", budget, i, lim, remBefore)
			}
		}
		// Every reading of this clock costs a step; after the last deadline check the engine reads
		// it at most three more times (timing the step, the total), so with a real clock the
		// overshoot is the margin plus nanoseconds.
		end := clock.now
		if end.After(set.Deadline.Add(3 * clock.step)) {
			t.Errorf("budget %v: returned at %v, deadline %v", budget, end.Sub(start), budget)
		}
		switch r.Status {
		case gbd.StatusOptimal:
			if budget < time.Second {
				t.Logf("budget %v: optimal in %d iterations", budget, r.Iterations)
			}
		case gbd.StatusGap:
			if r.Y == nil || r.LBD > r.UBD || math.IsInf(r.UBD, 0) {
				t.Errorf("budget %v: gap result without a valid incumbent/bounds: %+v", budget, r)
			}
		case gbd.StatusNoSolution:
			if r.Y != nil || r.Message == "" {
				t.Errorf("budget %v: no_solution with y=%v message=%q", budget, r.Y, r.Message)
			}
		default:
			t.Errorf("budget %v: status %s", budget, r.Status)
		}
		if budget == 5*time.Millisecond && r.Status == gbd.StatusOptimal {
			t.Errorf("budget %v: 5 clock steps cannot finish a solve", budget)
		}
		if budget == time.Second && r.Status != gbd.StatusOptimal {
			t.Errorf("budget %v: status %s, want optimal", budget, r.Status)
		}
	}
}

// TestTkSchedule checks T_k = T_min + (T_max − T_min)(1 − gap_k/gap_0) on the trace.
func TestTkSchedule(t *testing.T) {
	ypb := synthesis.Admissible()
	rng := rand.New(rand.NewPCG(5, 5))
	pol, _ := gbd.NewBuiltin("oracle", 0)
	tmin, tmax := 100*time.Millisecond, 500*time.Millisecond
	checked := 0
	for range 20 {
		p := synthesis.Problem(synthesis.SampleFeasible(rng))
		r, err := (&gbd.Engine{Policy: pol}).Solve(p, ypb, gbd.Settings{TMin: tmin, TMax: tmax})
		if err != nil {
			t.Fatal(err)
		}
		gap0 := math.NaN()
		prevLBD, prevUBD := math.Inf(-1), math.Inf(1)
		for _, it := range r.Trace {
			if it.Tk == 0 {
				prevLBD, prevUBD = it.LBD, it.UBD
				continue
			}
			// T_k uses the gap before this iteration's master (UBD already updated by S(y^k)).
			ubd := math.Min(prevUBD, it.Z)
			if !it.Feasible {
				ubd = prevUBD
			}
			gap := ubd - prevLBD
			want := tmin
			if !math.IsNaN(gap0) && !math.IsInf(gap, 0) {
				want = tmin + time.Duration(float64(tmax-tmin)*(1-math.Min(1, math.Max(0, gap/gap0))))
			}
			if d := it.Tk - want; d > time.Microsecond || d < -time.Microsecond {
				t.Fatalf("iteration %d: T_k = %v, want %v", it.K, it.Tk, want)
			}
			checked++
			if math.IsNaN(gap0) && !math.IsInf(it.UBD-it.LBD, 0) {
				gap0 = it.UBD - it.LBD
			}
			prevLBD, prevUBD = it.LBD, it.UBD
		}
	}
	if checked == 0 {
		t.Fatal("no time-limited master solve in 20 instances")
	}
}
