package gbd_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipopt"
	"gbdmpc/internal/knob"
	"gbdmpc/plant/synthesis"
)

func relClose(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func masters() map[string]func() gbd.Master {
	return map[string]func() gbd.Master{
		"enum": func() gbd.Master { return &enum.Master{} },
		"cbc":  func() gbd.Master { return &cbc.Master{} },
	}
}

// checkInvariants asserts GBD's invariants along a trace: LBD ≤ UBD, LBD never decreases, UBD
// never increases, and every cut is valid at the true optimum's value function: an optimality cut
// never exceeds Z(y) at a feasible y, and a feasibility cut never excludes a feasible y.
func checkInvariants(t *testing.T, label string, r *gbd.Result, p *gbd.Problem, ypb *gbd.Admissible, z map[string]float64) {
	t.Helper()
	lbd, ubd := math.Inf(-1), math.Inf(1)
	for _, it := range r.Trace {
		if it.LBD > it.UBD+1e-6*math.Max(1, math.Abs(it.UBD)) {
			t.Fatalf("%s: iteration %d: LBD %g > UBD %g", label, it.K, it.LBD, it.UBD)
		}
		if it.LBD < lbd-1e-12 {
			t.Fatalf("%s: iteration %d: LBD decreased from %g to %g", label, it.K, lbd, it.LBD)
		}
		if it.UBD > ubd+1e-12 {
			t.Fatalf("%s: iteration %d: UBD increased from %g to %g", label, it.K, ubd, it.UBD)
		}
		lbd, ubd = it.LBD, it.UBD
	}
	y := make([]float64, p.NY)
	for k, c := range r.Cuts {
		for j := range ypb.Count() {
			ypb.Float(j, y)
			zy, feasible := z[fmt.Sprint(y)]
			if !feasible {
				continue
			}
			v := c.Eval(y)
			switch c.Kind {
			case gbd.OptimalityCut:
				if v > zy+1e-5*math.Max(1, math.Abs(zy)) {
					t.Fatalf("%s: optimality cut %d gives %g > Z(%v) = %g", label, k, v, y, zy)
				}
			case gbd.FeasibilityCut:
				if v > 1e-5 {
					t.Fatalf("%s: feasibility cut %d excludes feasible y = %v (φ_f = %g)", label, k, y, v)
				}
			}
		}
	}
	// No assignment evaluated twice.
	seen := map[string]bool{}
	for _, it := range r.Trace {
		key := fmt.Sprint(it.Y)
		if seen[key] {
			t.Fatalf("%s: assignment %v evaluated twice", label, it.Y)
		}
		seen[key] = true
	}
}

// valueFunction maps each feasible admissible y to Z(y), from the ground truth's enumeration.
func valueFunction(gt *gbd.GroundTruth, ypb *gbd.Admissible) map[string]float64 {
	z := map[string]float64{}
	y := make([]float64, ypb.NY)
	for j, v := range gt.Z {
		if !math.IsInf(v, 1) {
			z[fmt.Sprint(ypb.Float(j, y))] = v
		}
	}
	return z
}

func gbdNLP() (o nlp.Options) { return }

// TestSynthesisMatchesGroundTruth is the acceptance test: 200 seeded instances, feasible and
// infeasible, both back-ends, against the per-assignment NLP enumeration.
func TestSynthesisMatchesGroundTruth(t *testing.T) {
	n := knob.Size(200, 40)
	rng := rand.New(rand.NewPCG(2026, 11))
	ypb := synthesis.Admissible()
	if ypb.Count() != 12 {
		t.Fatalf("|Y_pb| = %d, want 12", ypb.Count())
	}
	infeasible := 0
	iters := map[string]int{}
	for i := range n {
		in := synthesis.Sample(rng)
		p := synthesis.Problem(in)
		gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if gt.Feasible != in.Feasible() {
			t.Fatalf("instance %d: ground truth feasible=%v, analytic %v", i, gt.Feasible, in.Feasible())
		}
		if !gt.Feasible {
			infeasible++
		}
		z := valueFunction(gt, ypb)
		for name, mk := range masters() {
			label := fmt.Sprintf("instance %d/%s", i, name)
			e := gbd.Engine{NLP: ipopt.NewRescued(), Master: mk()} // the product's back-end
			r, err := e.Solve(p, ypb, gbd.Settings{})
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			iters[name] += r.Iterations
			if !gt.Feasible {
				if r.Status != gbd.StatusInfeasible {
					t.Fatalf("%s: status %s, want infeasible", label, r.Status)
				}
				continue
			}
			if r.Status != gbd.StatusOptimal {
				t.Fatalf("%s: status %s (%s), want optimal", label, r.Status, r.Message)
			}
			if fmt.Sprint(r.Y) != fmt.Sprint(gt.Y) {
				// A tie within ε is not a mismatch: both must then be optimal to 1e-6.
				if !relClose(z[fmt.Sprint(r.Y)], gt.Objective, 1e-6) {
					t.Fatalf("%s: y = %v (Z=%g), ground truth %v (Z=%g)", label, r.Y, r.Objective, gt.Y, gt.Objective)
				}
			}
			if !relClose(r.Objective, gt.Objective, 1e-6) {
				t.Fatalf("%s: objective %.10g, ground truth %.10g", label, r.Objective, gt.Objective)
			}
			checkInvariants(t, label, r, p, ypb, z)
		}
	}
	if infeasible == 0 || infeasible == n {
		t.Fatalf("%d of %d instances infeasible: the sample must have both kinds", infeasible, n)
	}
	t.Logf("%d instances (%d infeasible); mean iterations %v", n, infeasible, func() map[string]float64 {
		m := map[string]float64{}
		for k, v := range iters {
			m[k] = float64(v) / float64(n)
		}
		return m
	}())
}

// TestFalseInfeasibilityIsRetried pins an instance where Ipopt's adaptive barrier declared a
// feasible S(y) infeasible (y4 = 0 forces x11 = x13 = 0 through a two-variable row, a feasible set
// with empty interior). F(y) then finds a feasible point and S is solved again from it, so every
// start of GBD reaches the optimum.
func TestFalseInfeasibilityIsRetried(t *testing.T) {
	in := synthesis.Instance{V: 1,
		Gamma: []float64{20.796661778506657, 11.566394636848823, 32.746904586374725, 35.777772576620805, 4.197687458873693},
		U:     8.13606399434662, Rho: []float64{0.4123343174333418, 1.1005520482550784}}
	p := synthesis.Problem(in)
	ypb := synthesis.Admissible()
	gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for j := range ypb.Count() {
		y0 := ypb.Float(j, make([]float64, ypb.NY))
		r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, ypb, gbd.Settings{Y0: y0})
		if err != nil || r.Status != gbd.StatusOptimal || !relClose(r.Objective, gt.Objective, 1e-6) {
			t.Fatalf("y0 = %v: %v %v %s (objective %g, ground truth %g)", y0, err, r.Status, r.Message, r.Objective, gt.Objective)
		}
	}
}

// cutoffRecorder is the exact master that records what the engine tells it through gbd.Cutoff.
type cutoffRecorder struct {
	enum.Master
	got []float64
}

func (c *cutoffRecorder) SetCutoff(v float64) { c.got = append(c.got, v) }

// The engine tells a master with the Cutoff capability UBD − ε each time the incumbent improves,
// and nothing else: the staged master sizes its pool by it, so a value above UBD − ε would leave
// assignments out that the solve still has to exclude. The only allowance is rounding: the value
// may sit a few ulps above the computed UBD − ε so that UBD − cutoff ≤ ε holds as computed (a bound
// at the cutoff must close the gap).
func TestEngineSetsCutoff(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	ypb := synthesis.Admissible()
	set := gbd.Settings{Eps: 1e-3}
	checked := 0
	for range 10 {
		in := synthesis.SampleFeasible(rng)
		m := &cutoffRecorder{}
		e := gbd.Engine{NLP: ipopt.NewRescued(), Master: m}
		r, err := e.Solve(synthesis.Problem(in), ypb, set)
		if err != nil || r.Status != gbd.StatusOptimal {
			t.Fatalf("solve: %v %v", err, r.Status)
		}
		var ubds []float64
		ubd := math.Inf(1)
		for _, it := range r.Trace {
			if it.Feasible && it.Z < ubd {
				ubd = it.Z
				ubds = append(ubds, ubd)
			}
		}
		if len(m.got) != len(ubds) {
			t.Fatalf("%d cutoffs %v for %d incumbent improvements %v", len(m.got), m.got, len(ubds), ubds)
		}
		for i, u := range ubds {
			c, low := m.got[i], u-set.Eps
			if c < low || c > low+4*ulp(low) || u-c > set.Eps {
				t.Fatalf("cutoff %d is %v for UBD %v: want UBD − ε = %v up to rounding, with UBD − cutoff ≤ ε", i, c, u, low)
			}
		}
		checked += len(ubds)
	}
	if checked < 10 {
		t.Errorf("only %d incumbent improvements in 10 solves", checked)
	}
}

// cutoffProver is the exact master that, like the staged master with a spent pool, answers
// MasterAboveCutoff when its optimum lies above the engine's cutoff, with the bound lie below it.
// With exactOnly it does so only for exact solves offered no start, as the staged master, and a
// time-limited solve's bound is 1 below the optimum, as a search stopped by its limit leaves it.
type cutoffProver struct {
	enum.Master
	cutoff, lie float64
	exactOnly   bool
	above       int
}

func (c *cutoffProver) SetCutoff(v float64) { c.cutoff = v }

func (c *cutoffProver) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	r, err := c.Master.Solve(limit, start)
	if err != nil || r.Status != gbd.MasterOptimal {
		return r, err
	}
	if c.exactOnly && limit > 0 {
		r.Status, r.Bound = gbd.MasterStopped, r.Mu-1
		return r, nil
	}
	if r.Mu > c.cutoff && (!c.exactOnly || start == nil) {
		c.above++
		return gbd.MasterResult{Status: gbd.MasterAboveCutoff, Mu: math.Inf(1), Bound: c.cutoff - c.lie}, nil
	}
	return r, nil
}

// repeatPolicy proposes the last evaluated assignment that the feasibility cuts allow: once the
// master's optimum is no better, the engine takes it, finds it a repeat and solves the master
// exactly.
type repeatPolicy struct{ last []float64 }

func (p *repeatPolicy) Propose(v *gbd.MasterView) (gbd.Proposal, error) {
	if gbd.SatisfiesFeasibilityCuts(v.Cuts, v.Prev) {
		p.last = append(p.last[:0], v.Prev...)
	}
	if p.last == nil {
		return gbd.Proposal{}, errors.New("no feasible assignment evaluated yet")
	}
	return gbd.Proposal{Assign: append([]float64(nil), p.last...)}, nil
}

// A master's MasterAboveCutoff ends the solve certified: the incumbent is the exact master's
// within ε, the gap as Result.Gap computes it is at most ε, and LBD stays monotone; also through
// Algorithm 2's repeat rule, when the exact master that follows a repeated proposal is the one
// that answers above the cutoff. A master whose bound is below the cutoff it claims to be above
// fails the solve instead of certifying it.
func TestEngineCertifiesAboveCutoff(t *testing.T) {
	ypb := synthesis.Admissible()
	set := gbd.Settings{Eps: 1e-2}
	for _, tc := range []struct {
		name   string
		master func() *cutoffProver
		policy func() gbd.Policy
	}{
		{"classical", func() *cutoffProver { return &cutoffProver{} }, func() gbd.Policy { return nil }},
		{"repeat rule", func() *cutoffProver { return &cutoffProver{exactOnly: true} }, func() gbd.Policy { return &repeatPolicy{} }},
	} {
		rng := rand.New(rand.NewPCG(6, 6))
		above := 0
		for range 10 {
			p := synthesis.Problem(synthesis.SampleFeasible(rng))
			want, err := (&gbd.Engine{NLP: ipopt.NewRescued(), Master: &enum.Master{}}).Solve(p, ypb, set)
			if err != nil || want.Status != gbd.StatusOptimal {
				t.Fatalf("exact: %v %v", err, want.Status)
			}
			m := tc.master()
			got, err := (&gbd.Engine{NLP: ipopt.NewRescued(), Master: m, Policy: tc.policy()}).Solve(p, ypb, set)
			if err != nil || got.Status != gbd.StatusOptimal || got.Gap() > set.Eps || math.Abs(got.Objective-want.Objective) > set.Eps {
				t.Fatalf("%s: %v %v (%s), objective %v gap %v, exact master's %v", tc.name, err, got.Status, got.Message, got.Objective, got.Gap(), want.Objective)
			}
			prev := math.Inf(-1)
			for _, it := range got.Trace {
				if it.LBD < prev {
					t.Errorf("%s: LBD fell at iteration %d", tc.name, it.K)
				}
				prev = it.LBD
			}
			if m.above == 0 {
				continue
			}
			above++
			liar := tc.master()
			liar.lie = 2 * set.Eps
			lied, err := (&gbd.Engine{NLP: ipopt.NewRescued(), Master: liar, Policy: tc.policy()}).Solve(p, ypb, set)
			if err != nil || lied.Status != gbd.StatusFailed || !strings.Contains(lied.Message, "above the cutoff") {
				t.Errorf("%s, a bound 2ε below the cutoff: %v %v (%s)", tc.name, err, lied.Status, lied.Message)
			}
		}
		if above == 0 {
			t.Errorf("%s: no solve ended above the cutoff", tc.name)
		}
	}
}

// masterCounter counts the master problems the engine records.
type masterCounter struct{ n int }

func (c *masterCounter) RecordMaster(*gbd.MasterView, *gbd.Iteration) { c.n++ }

// Settings.Starts are evaluated after Y0, in order, before the first master; one outside Y_pb, a
// repeat of an evaluated one, or one of the wrong length is skipped; no master is recorded for
// them; and the solve still reaches the ground truth with GBD's invariants.
func TestEngineEvaluatesStarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	ypb := synthesis.Admissible()
	y := func(j int) []float64 { return ypb.Float(j, make([]float64, ypb.NY)) }
	outside := []float64{1, 1, 1, 1, 1} // not in Y_pb (E14 switches exactly one of y1, y2 off)
	if ypb.Contains(outside) {
		t.Fatal("the test's outside assignment is in Y_pb")
	}
	for range 5 {
		in := synthesis.SampleFeasible(rng)
		p := synthesis.Problem(in)
		gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		set := gbd.Settings{Y0: y(0), Starts: [][]float64{y(5), outside, y(0), {1, 0}, y(9), y(5)}}
		rec := &masterCounter{}
		e := gbd.Engine{NLP: ipopt.NewRescued(), Master: &enum.Master{}, Recorder: rec}
		r, err := e.Solve(p, ypb, set)
		if err != nil || r.Status != gbd.StatusOptimal || !relClose(r.Objective, gt.Objective, 1e-6) {
			t.Fatalf("solve: %v %v objective %v, ground truth %v", err, r.Status, r.Objective, gt.Objective)
		}
		want := [][]float64{y(0), y(5), y(9)}
		for k, w := range want {
			if k >= len(r.Trace) {
				break // the gap closed first
			}
			if fmt.Sprint(r.Trace[k].Y) != fmt.Sprint(w) {
				t.Fatalf("iteration %d evaluated %v, want %v (Y0, then the admissible new starts in order)", k, r.Trace[k].Y, w)
			}
		}
		// An iteration whose next assignment is a start runs no master (iterations 0 and 1, which
		// lead to the two starts); every other one that ran its master was recorded.
		var none gbd.MasterStatus
		mastered := 0
		for k, it := range r.Trace {
			if k <= 1 && k < len(r.Trace)-1 && it.Master != none {
				t.Fatalf("iteration %d (followed by a start) ran a master: %v", k, it.Master)
			}
			if it.Master != none {
				mastered++
			}
		}
		if rec.n != mastered || mastered == 0 {
			t.Errorf("%d masters recorded, %d iterations ran one", rec.n, mastered)
		}
		checkInvariants(t, "starts", r, p, ypb, valueFunction(gt, ypb))
	}
}

// ulp is the distance from x to the next float64 away from zero.
func ulp(x float64) float64 { return math.Abs(math.Nextafter(x, math.Copysign(math.Inf(1), x)) - x) }
