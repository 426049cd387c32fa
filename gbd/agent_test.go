package gbd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/agent"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp/ipopt"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/fault"
	"gbdmpc/internal/knob"
	"gbdmpc/plant/synthesis"
)

// agentMasters are the master back-ends Algorithm 2 runs on in the tests: both real ones, and each
// wrapped as a MIP solver that hits its time limit at once and returns its MIP start (CBC does that
// when the limit is shorter than its set-up), which is what makes repeated proposals reach the
// engine's repeat rule.
func agentMasters() map[string]func() gbd.Master {
	m := masters()
	for name, mk := range masters() {
		m[name+"-stopped"] = func() gbd.Master { return &stoppedMaster{Master: mk()} }
	}
	return m
}

// stoppedMaster answers every time-limited solve with a MIP start as a MIP solver stopped before
// its first node would: the start as incumbent (its objective μ̂_B) and the master's bound lowered by
// one unit, which stays valid. Exact solves (no limit or no start) go to the wrapped master.
type stoppedMaster struct {
	gbd.Master
	cuts []gbd.Cut
}

func (m *stoppedMaster) AddCut(c *gbd.Cut) {
	m.cuts = append(m.cuts, gbd.Cut{Kind: c.Kind, Coef: append([]float64(nil), c.Coef...), Const: c.Const})
	m.Master.AddCut(c)
}

func (m *stoppedMaster) Reset(ny int, pure []gbd.PureRow, ypb *gbd.Admissible) error {
	m.cuts = nil
	return m.Master.Reset(ny, pure, ypb)
}

func (m *stoppedMaster) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	r, err := m.Master.Solve(limit, start)
	if err != nil || limit == 0 || start == nil || r.Status != gbd.MasterOptimal {
		return r, err
	}
	mu := maxOptimality(m.cuts, start)
	return gbd.MasterResult{Status: gbd.MasterStopped, Y: append([]float64(nil), start...), Mu: mu, Bound: math.Min(r.Bound-1, mu)}, nil
}

// TestAgentBuiltinPoliciesReachClassicalOptimum is the paper's guarantee (Section IV): whatever the
// agent proposes, Algorithm 2 returns the ground truth, and its trace keeps GBD's invariants (LBD ≤
// UBD, monotone bounds, every cut valid at every admissible y, no assignment evaluated twice), on
// every master back-end.
func TestAgentBuiltinPoliciesReachClassicalOptimum(t *testing.T) {
	n := knob.Size(40, 10)
	rng := rand.New(rand.NewPCG(4, 2))
	ypb := synthesis.Admissible()
	outcomes := map[string]int{}
	for i := range n {
		in := synthesis.SampleFeasible(rng)
		p := synthesis.Problem(in)
		gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
		if err != nil || !gt.Feasible {
			t.Fatalf("instance %d: ground truth: %v (feasible %v)", i, err, gt != nil && gt.Feasible)
		}
		z := valueFunction(gt, ypb)
		for _, name := range agent.BuiltinNames() {
			for mname, mk := range agentMasters() {
				pol, err := agent.NewBuiltin(name, uint64(i))
				if err != nil {
					t.Fatal(err)
				}
				label := fmt.Sprintf("instance %d/%s/%s", i, name, mname)
				r, err := (&gbd.Engine{NLP: ipopt.NewRescued(), Master: mk(), Policy: pol}).Solve(p, ypb, gbd.Settings{})
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if r.Status != gbd.StatusOptimal {
					t.Fatalf("%s: status %s (%s)", label, r.Status, r.Message)
				}
				if !relClose(r.Objective, gt.Objective, 1e-6) ||
					fmt.Sprint(r.Y) != fmt.Sprint(gt.Y) && !relClose(z[fmt.Sprint(r.Y)], gt.Objective, 1e-6) {
					t.Fatalf("%s: y=%v obj=%.10g, ground truth y=%v obj=%.10g", label, r.Y, r.Objective, gt.Y, gt.Objective)
				}
				checkInvariants(t, label, r, p, ypb, z)
				checkAcceptanceLogic(t, label, name, r, ypb)
				for _, it := range r.Trace {
					if it.Master != 0 {
						outcomes[it.Outcome]++
					}
				}
			}
		}
	}
	// The stopped masters must have driven the engine through its repeat rule, or the test would
	// not check what it claims to.
	if outcomes[gbd.OutcomeRepeat] == 0 || outcomes[gbd.OutcomeAccepted] == 0 || outcomes[gbd.OutcomeReplaced] == 0 ||
		outcomes[gbd.OutcomeInfeasible] == 0 || outcomes[gbd.OutcomeFinal] == 0 {
		t.Fatalf("outcomes %v: every outcome must occur", outcomes)
	}
	t.Logf("outcomes over %d instances: %v", n, outcomes)
}

// checkAcceptanceLogic reads the per-iteration trace against Algorithm 2's rules and the meaning of
// each outcome: an accepted proposal IS the next iterate and is evaluated at the next iteration; a
// repeat was evaluated before and is not the next iterate; a replaced one lost the comparison with
// the time-limited solve's ȳ; a final one belongs to the last master step. The counts in r.Agent
// must be the trace's.
func checkAcceptanceLogic(t *testing.T, label, policy string, r *gbd.Result, ypb *gbd.Admissible) {
	t.Helper()
	st := gbd.AgentStats{}
	evaluated := map[string]bool{}
	for idx, it := range r.Trace {
		evaluated[fmt.Sprint(it.Y)] = true
		if it.Master == 0 {
			continue // converged right after the subproblem
		}
		st.Proposed++
		cuts := r.Cuts[:countCuts(r, it.K)]
		var prop []float64
		if it.Proposal >= 0 {
			prop = ypb.Float(it.Proposal, make([]float64, ypb.NY))
		}
		last := idx == len(r.Trace)-1
		if it.Outcome != gbd.OutcomeInfeasible && prop != nil && violatesAny(cuts, prop) {
			t.Fatalf("%s: iteration %d: outcome %q for a proposal %v that violates a feasibility cut", label, it.K, it.Outcome, prop)
		}
		switch it.Outcome {
		case gbd.OutcomeInfeasible:
			if it.Tk != 0 {
				t.Fatalf("%s: iteration %d: a rejected proposal must lead to an exact master, got T_k = %v", label, it.K, it.Tk)
			}
			if prop == nil || !violatesAny(cuts, prop) {
				t.Fatalf("%s: iteration %d: proposal %v rejected as infeasible but satisfies every feasibility cut", label, it.K, prop)
			}
			continue
		case gbd.OutcomeAccepted:
			st.Accepted++
			if fmt.Sprint(it.Next) != fmt.Sprint(prop) {
				t.Fatalf("%s: iteration %d: accepted proposal %v but the next iterate is %v", label, it.K, prop, it.Next)
			}
			if last || fmt.Sprint(r.Trace[idx+1].Y) != fmt.Sprint(prop) {
				t.Fatalf("%s: iteration %d: accepted proposal %v was not evaluated next", label, it.K, prop)
			}
		case gbd.OutcomeReplaced:
			st.SolverSelected++
			if fmt.Sprint(it.Next) == fmt.Sprint(prop) {
				t.Fatalf("%s: iteration %d: replaced proposal %v is the next iterate", label, it.K, prop)
			}
			if it.MasterY == nil || maxOptimality(cuts, prop) <= it.MasterMu+1e-6 {
				t.Fatalf("%s: iteration %d: proposal %v (μ̂ %g) replaced by ȳ %v (μ̄ %g)", label, it.K, prop, maxOptimality(cuts, prop), it.MasterY, it.MasterMu)
			}
			if policy == "oracle" {
				t.Fatalf("%s: iteration %d: the oracle's proposal was replaced", label, it.K)
			}
		case gbd.OutcomeRepeat:
			st.Repeated++
			if !evaluated[fmt.Sprint(prop)] {
				t.Fatalf("%s: iteration %d: repeat outcome for %v, which was never evaluated", label, it.K, prop)
			}
			if fmt.Sprint(it.Next) == fmt.Sprint(prop) || last {
				t.Fatalf("%s: iteration %d: repeated proposal %v: next iterate %v, last %v", label, it.K, prop, it.Next, last)
			}
		case gbd.OutcomeFinal:
			st.Final++
			if !last {
				t.Fatalf("%s: iteration %d: outcome final before the last iteration", label, it.K)
			}
		default:
			t.Fatalf("%s: iteration %d: outcome %q", label, it.K, it.Outcome)
		}
		st.Feasible++
	}
	if st != r.Agent {
		t.Fatalf("%s: trace counts %+v, result %+v", label, st, r.Agent)
	}
	if policy == "oracle" && r.Agent.Feasible != r.Agent.Proposed {
		t.Fatalf("%s: oracle proposals screened out: %+v", label, r.Agent)
	}
}

// maxOptimality is μ̂_B = max over the optimality cuts at y.
func maxOptimality(cuts []gbd.Cut, y []float64) float64 {
	v := math.Inf(-1)
	for i := range cuts {
		if cuts[i].Kind == gbd.OptimalityCut {
			v = math.Max(v, cuts[i].Eval(y))
		}
	}
	return v
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

// TestDeadlineBudgetRule checks the documented rule with a fake clock: every master limit is within
// [T_min', T_max'] where both are capped by fractions of the time left, and the solve stops at the
// deadline with the best incumbent and a certified gap.
func TestDeadlineBudgetRule(t *testing.T) {
	ypb := synthesis.Admissible()
	rng := rand.New(rand.NewPCG(9, 9))
	in := synthesis.SampleFeasible(rng)
	p := synthesis.Problem(in)
	pol, _ := agent.NewBuiltin("random", 1)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, budget := range []time.Duration{5 * time.Millisecond, 40 * time.Millisecond, time.Second} {
		const tick = time.Millisecond
		clock := fakeclock.Ticking(start, tick)
		rec := &fault.Master{Clock: clock}
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
		for i, lim := range rec.Limits {
			if lim == 0 {
				t.Errorf("budget %v: solve %d has no time limit although the solve has a deadline", budget, i)
				continue
			}
			// The limit was computed from the time left a few clock readings before the call.
			remBefore := set.Deadline.Sub(rec.Starts[i]) - margin + 3*tick
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
		end := clock.Now().Add(-tick) // the time it stands at (this reading is not the engine's)
		if end.After(set.Deadline.Add(3 * tick)) {
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

// TestTkSchedule checks T_k = T_min + (T_max − T_min)(1 − gap_k/gap_0) on the trace, for every
// built-in policy on every master back-end.
func TestTkSchedule(t *testing.T) {
	ypb := synthesis.Admissible()
	tmin, tmax := 100*time.Millisecond, 500*time.Millisecond
	n := knob.Size(8, 3)
	for _, name := range agent.BuiltinNames() {
		for mname, mk := range masters() {
			rng := rand.New(rand.NewPCG(5, 5))
			checked := 0
			for i := range n {
				pol, _ := agent.NewBuiltin(name, uint64(i))
				p := synthesis.Problem(synthesis.SampleFeasible(rng))
				r, err := (&gbd.Engine{NLP: ipopt.NewRescued(), Policy: pol, Master: mk()}).Solve(p, ypb, gbd.Settings{TMin: tmin, TMax: tmax})
				if err != nil {
					t.Fatal(err)
				}
				checked += checkTk(t, fmt.Sprintf("%s/%s/instance %d", name, mname, i), r, tmin, tmax)
			}
			if checked == 0 && name != "infeasible" {
				t.Fatalf("%s/%s: no time-limited master solve in %d instances", name, mname, n)
			}
		}
	}
}

// checkTk checks every time-limited master of one trace against the schedule and returns how many
// it checked.
func checkTk(t *testing.T, label string, r *gbd.Result, tmin, tmax time.Duration) int {
	t.Helper()
	checked := 0
	gap0 := math.NaN()
	prevLBD, prevUBD := math.Inf(-1), math.Inf(1)
	for _, it := range r.Trace {
		if it.Tk != 0 {
			// T_k uses the gap before this iteration's master (UBD already updated by S(y^k)).
			ubd := prevUBD
			if it.Feasible {
				ubd = math.Min(prevUBD, it.Z)
			}
			gap := ubd - prevLBD
			want := tmin
			if !math.IsNaN(gap0) && !math.IsInf(gap, 0) {
				want = tmin + time.Duration(float64(tmax-tmin)*(1-math.Min(1, math.Max(0, gap/gap0))))
			}
			if d := it.Tk - want; d > time.Microsecond || d < -time.Microsecond {
				t.Fatalf("%s: iteration %d: T_k = %v, want %v", label, it.K, it.Tk, want)
			}
			checked++
		}
		// gap_0 is the first finite gap right after a master solve's bound, whoever asked for it
		// (a re-solve after a repeat raises LBD later in the same step).
		if g := it.UBD - math.Max(prevLBD, it.MasterBound); it.Master != 0 && math.IsNaN(gap0) && !math.IsInf(g, 0) && !math.IsNaN(g) {
			gap0 = g
		}
		prevLBD, prevUBD = it.LBD, it.UBD
	}
	return checked
}

// TestPatienceBenchesALosingPolicy: with Settings.Patience, a policy whose proposals keep losing
// is asked no more once Patience of them in a row have lost; the rest of the solve is classical
// GBD (exact masters, no T_k), still ends at the ground truth, and every master step is either a
// proposal or counted as benched. A policy whose proposals win is never benched.
func TestPatienceBenchesALosingPolicy(t *testing.T) {
	const patience = 2
	rng := rand.New(rand.NewPCG(5, 9))
	ypb := synthesis.Admissible()
	benched := 0
	for i := range knob.Size(12, 4) {
		p := synthesis.Problem(synthesis.SampleFeasible(rng))
		gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
		if err != nil || !gt.Feasible {
			t.Fatalf("instance %d: ground truth: %v", i, err)
		}
		z := valueFunction(gt, ypb)
		for _, name := range []string{"infeasible", "suboptimal", "oracle"} {
			label := fmt.Sprintf("instance %d/%s", i, name)
			pol, _ := agent.NewBuiltin(name, uint64(i))
			r, err := (&gbd.Engine{NLP: ipopt.NewRescued(), Master: &enum.Master{}, Policy: pol}).Solve(p, ypb, gbd.Settings{Patience: patience})
			if err != nil || r.Status != gbd.StatusOptimal || !relClose(r.Objective, gt.Objective, 1e-6) {
				t.Fatalf("%s: %v, status %s, objective %v, ground truth %v", label, err, r.Status, r.Objective, gt.Objective)
			}
			checkInvariants(t, label, r, p, ypb, z)
			steps, lost, out := 0, 0, false
			for _, it := range r.Trace {
				if it.Master == 0 {
					continue
				}
				steps++
				if out {
					if it.Outcome != gbd.OutcomeNone || it.Tk != 0 {
						t.Fatalf("%s: iteration %d after the policy was benched: outcome %q, T_k %v", label, it.K, it.Outcome, it.Tk)
					}
					continue
				}
				if it.Outcome == gbd.OutcomeAccepted {
					lost = 0
				} else if it.Outcome != gbd.OutcomeFinal {
					lost++
				}
				out = lost >= patience
			}
			if r.Agent.Proposed+r.Agent.Benched != steps {
				t.Fatalf("%s: %d master steps, %+v", label, steps, r.Agent)
			}
			if name == "oracle" && r.Agent.Benched != 0 {
				t.Fatalf("%s: the oracle was benched: %+v", label, r.Agent)
			}
			if name == "infeasible" && r.Agent.Proposed > patience {
				t.Fatalf("%s: %d proposals that all lost, patience %d", label, r.Agent.Proposed, patience)
			}
			benched += r.Agent.Benched
		}
	}
	if benched == 0 {
		t.Fatal("no master step was benched: the test checks nothing")
	}
}
