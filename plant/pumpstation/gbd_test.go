package pumpstation

import (
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/agent"
	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/master/staged"
)

// masters are the master back-ends that must agree with ground truth.
var masters = []struct {
	name string
	new  func() gbd.Master
}{
	{"enum", func() gbd.Master { return &enum.Master{} }},
	{"cbc", func() gbd.Master { return &cbc.Master{} }},
	{"staged", func() gbd.Master { return &staged.Master{} }},
}

// groundTruth enumerates every S(y) of in.
func groundTruth(t *testing.T, c *Config, in *Instance) (*gbd.Problem, *gbd.Admissible, *gbd.GroundTruth) {
	t.Helper()
	ypb, err := Admissible(c)
	if err != nil {
		t.Fatal(err)
	}
	p := Problem(c, in)
	gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return p, ypb, gt
}

// agreeWithGroundTruth solves p with classical GBD and checks that it finds the ground truth's y
// and objective, with valid cuts and a monotone lower bound.
func agreeWithGroundTruth(t *testing.T, p *gbd.Problem, ypb *gbd.Admissible, gt *gbd.GroundTruth, newMaster func() gbd.Master) (iters int) {
	t.Helper()
	return solveAgreesWithGroundTruth(t, gbd.Engine{Master: newMaster()}, gbd.Settings{Eps: 1e-7}, p, ypb, gt).Iterations
}

// solveAgreesWithGroundTruth is agreeWithGroundTruth for any engine and settings; it returns the
// result.
func solveAgreesWithGroundTruth(t *testing.T, eng gbd.Engine, set gbd.Settings, p *gbd.Problem, ypb *gbd.Admissible, gt *gbd.GroundTruth) *gbd.Result {
	t.Helper()
	r, err := eng.Solve(p, ypb, set)
	if err != nil {
		t.Fatal(err)
	}
	if !gt.Feasible {
		if r.Status != gbd.StatusInfeasible {
			t.Errorf("ground truth infeasible, GBD ended %v", r.Status)
		}
		return r
	}
	if r.Status != gbd.StatusOptimal && r.Status != gbd.StatusGap {
		t.Fatalf("GBD ended %v (%s); ground truth %v at y=%v", r.Status, r.Message, gt.Objective, gt.Y)
	}
	if r.LBD > r.UBD+1e-9 {
		t.Errorf("LBD %v above UBD %v", r.LBD, r.UBD)
	}
	if math.Abs(r.Objective-gt.Objective) > 1e-6*math.Abs(gt.Objective) {
		t.Errorf("GBD objective %.9g, ground truth %.9g", r.Objective, gt.Objective)
	}
	if ypb.Index(r.Y) != ypb.Index(gt.Y) {
		t.Errorf("GBD y=%v, ground truth y=%v", r.Y, gt.Y)
	}
	// Every cut of the final master is valid at the optimum: no optimality cut above it, no
	// feasibility cut excluding it.
	for _, cut := range r.Cuts {
		v := cut.Eval(gt.Y)
		if cut.Kind == gbd.OptimalityCut && v > gt.Objective+1e-6*(1+math.Abs(gt.Objective)) {
			t.Errorf("optimality cut of iteration %d is %v at the optimum %v", cut.Iter, v, gt.Objective)
		}
		if cut.Kind == gbd.FeasibilityCut && v > 1e-6 {
			t.Errorf("feasibility cut of iteration %d excludes the optimum (%v)", cut.Iter, v)
		}
	}
	prev := math.Inf(-1)
	for _, it := range r.Trace {
		if it.LBD < prev-1e-9 {
			t.Errorf("LBD decreased at iteration %d: %v < %v", it.K, it.LBD, prev)
		}
		prev = it.LBD
	}
	return r
}

// TestGBDMatchesGroundTruth runs a handful of seeded instances of a 12-step, 3-block horizon (the
// minimum up-time rule still applies) so that the enumeration stays affordable in the short suite.
func TestGBDMatchesGroundTruth(t *testing.T) {
	c := DefaultConfig()
	c.Horizon, c.Blocks = 12, 3
	prof := DefaultProfile()
	rng := rand.New(rand.NewPCG(2024, 1))
	for i := range 3 {
		in := Sample(rng, &c, &prof)
		p, ypb, gt := groundTruth(t, &c, &in)
		for _, m := range masters {
			it := agreeWithGroundTruth(t, p, ypb, gt, m.new)
			t.Logf("instance %d, %s master: %d iterations", i, m.name, it)
		}
	}
}

// TestPolishedAgentMatchesGroundTruth: agent-based GBD over the staged master, with random
// scores screened and every screened proposal polished (gbd.Settings.Polish), still certifies
// the ground truth's optimum with valid cuts and a monotone lower bound; and polishing lets more
// proposals win Algorithm 2's comparison than the same proposals unpolished.
func TestPolishedAgentMatchesGroundTruth(t *testing.T) {
	c := DefaultConfig()
	c.Horizon, c.Blocks = 12, 3
	prof := DefaultProfile()
	rng := rand.New(rand.NewPCG(2024, 7))
	won := map[bool]int{}
	for range 3 {
		in := Sample(rng, &c, &prof)
		p, ypb, gt := groundTruth(t, &c, &in)
		for _, polish := range []bool{false, true} {
			pol, err := agent.NewBuiltin("random", 5)
			if err != nil {
				t.Fatal(err)
			}
			set := gbd.Settings{Eps: 1e-7, Candidates: 4, Polish: polish}
			r := solveAgreesWithGroundTruth(t, gbd.Engine{Master: &staged.Master{}, Policy: pol}, set, p, ypb, gt)
			won[polish] += r.Agent.Accepted + r.Agent.Final
		}
	}
	if won[true] <= won[false] {
		t.Errorf("proposals that won: %d polished, %d unpolished", won[true], won[false])
	}
	t.Logf("proposals that won: %d polished, %d unpolished", won[true], won[false])
}

// TestGBDMatchesGroundTruth50 is the acceptance test: on 50 seeded instances of the spec's
// horizon, GBD with the enum and the CBC master agree (same y, objective within 1e-6 relative),
// with valid cuts and a monotone lower bound. The first five are also checked against the ground
// truth, which enumerates all 889 NLPs and so costs several seconds an instance.
func TestGBDMatchesGroundTruth50(t *testing.T) {
	if testing.Short() {
		t.Skip("50 pump-station instances with both back-ends")
	}
	c := DefaultConfig()
	prof := DefaultProfile()
	ypb, err := Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(50, 50))
	total, n, lo, hi := 0, 0, math.MaxInt, 0
	for i := range 50 {
		in := Sample(rng, &c, &prof)
		if i < 5 {
			p, ypb, gt := groundTruth(t, &c, &in)
			for _, m := range masters {
				it := agreeWithGroundTruth(t, p, ypb, gt, m.new)
				total, n, lo, hi = total+it, n+1, min(lo, it), max(hi, it)
			}
		} else {
			p := Problem(&c, &in)
			var ref *gbd.Result
			for _, m := range masters {
				r, err := (&gbd.Engine{Master: m.new()}).Solve(p, ypb, gbd.Settings{Eps: 1e-7})
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != gbd.StatusOptimal && r.Status != gbd.StatusInfeasible {
					t.Fatalf("instance %d, %s: GBD ended %v (%s)", i, m.name, r.Status, r.Message)
				}
				prev := math.Inf(-1)
				for _, it := range r.Trace {
					if it.LBD < prev-1e-9 || it.LBD > it.UBD+1e-6*(1+math.Abs(it.UBD)) {
						t.Errorf("instance %d, %s: iteration %d: LBD %v (previous %v), UBD %v", i, m.name, it.K, it.LBD, prev, it.UBD)
					}
					prev = it.LBD
				}
				total, n, lo, hi = total+r.Iterations, n+1, min(lo, r.Iterations), max(hi, r.Iterations)
				if ref == nil {
					ref = r
					continue
				}
				if r.Status != ref.Status || (r.Status == gbd.StatusOptimal &&
					(ypb.Index(r.Y) != ypb.Index(ref.Y) || math.Abs(r.Objective-ref.Objective) > 1e-6*math.Abs(ref.Objective))) {
					t.Errorf("instance %d: %s gives %v y=%v obj=%.9g, enum gives %v y=%v obj=%.9g",
						i, m.name, r.Status, r.Y, r.Objective, ref.Status, ref.Y, ref.Objective)
				}
			}
		}
		if t.Failed() {
			t.Fatalf("stopping at instance %d", i)
		}
	}
	t.Logf("iterations: mean %.1f, range %d–%d over %d solves", float64(total)/float64(n), lo, hi, n)
}
