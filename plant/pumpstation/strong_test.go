package pumpstation

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/master/staged"
	"gbdmpc/internal/knob"
)

// TestStrengthenedCutsValidEverywhere is the certificate of the strengthened cuts
// (gbd.Lagrangian.Strengthened), checked by brute force over the whole Y_pb of the 12-binary
// station and over 3,000 admissible assignments drawn from the 24-binary one's 119,713: for the
// engine's own cuts of a solve, the cuts of S(y) and F(y) at random assignments and cuts of random
// multipliers (any μ ≥ 0 and λ), at every admissible y,
//
//   - an optimality cut is never above Z(y) where S(y) is feasible;
//   - a feasibility cut is never positive where S(y) is feasible;
//   - the strengthened cut is never below the classical Lagrangian cut of the same multipliers;
//
// and the engine's optimality cuts equal Z at their own assignment. Instances near the lower
// level limit are included, for infeasible plans and feasibility cuts.
//
// The stage cuts (gbd.StageCutter, Settings.StageCuts) of the same multipliers are checked the same
// way, and never below the strengthened cut; so are both with the start costs as hinges (gbd.Hinges:
// the start rows' multipliers at 0 and the exact start costs added), never below the same cut
// without them. The engine's cuts carry the hinges (both masters take them).
func TestStrengthenedCutsValidEverywhere(t *testing.T) {
	for _, size := range []int{12, 24} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c, err := SizedConfig(size)
			if err != nil {
				t.Fatal(err)
			}
			ypb, err := Admissible(&c)
			if err != nil {
				t.Fatal(err)
			}
			prof := DefaultProfile()
			rng := rand.New(rand.NewPCG(uint64(size), 35))
			for inst := range knob.Size(3, 2) {
				in := Sample(rng, &c, &prof)
				if inst == 1 {
					in.Level = 1.1 + 0.2*rng.Float64()
				}
				var at []int // nil: all of Y_pb
				if size == 24 {
					for range knob.Size(3000, 500) {
						at = append(at, rng.IntN(ypb.Count()))
					}
				}
				checkStrengthened(t, rng, ypb, Problem(&c, &in), at)
			}
		})
	}
}

// checkStrengthened checks the cuts of p at the assignments of Y_pb with the indices at (all of them
// when at is nil).
func checkStrengthened(t *testing.T, rng *rand.Rand, ypb *gbd.Admissible, p *gbd.Problem, at []int) {
	t.Helper()
	sub := gbd.NewSubproblems(p, nil, gbd.Settings{}.NLP)
	z := func(y []float64) float64 {
		res, err := sub.Evaluate(y, 0)
		if err != nil {
			t.Fatalf("S(y) at %v: %v", y, err)
		}
		if !res.Feasible {
			return math.Inf(1)
		}
		return res.Z
	}
	if at == nil {
		for j := range ypb.Count() {
			at = append(at, j)
		}
	}
	lag, err := gbd.NewLagrangian(p)
	if err != nil {
		t.Fatal(err)
	}
	type checked struct {
		cut, classical gbd.Cut
		own            []float64 // the assignment whose subproblem gave the multipliers (nil: random)
		engine         bool
	}
	var cuts []checked
	stage, err := gbd.NewStageCutter(p, ypb)
	if err != nil {
		t.Fatal(err)
	}
	hs := gbd.FindHinges(p, ypb.Stages)
	if hs == nil || len(hs.Terms) != len(c0Pumps(p))*(blocksOf(ypb)-1) {
		t.Fatalf("hinges %v: want one per pump and block boundary (the starts)", hs)
	}
	// hinged is d with the hinge rows' multipliers at 0 (the cuts that carry the hinges).
	hinged := func(d gbd.CutDuals) gbd.CutDuals {
		d = d.Clone()
		for r := range d.Mu {
			if hs.HingeRow(r) {
				d.Mu[r] = 0
			}
		}
		return d
	}
	add := func(kind gbd.CutKind, d gbd.CutDuals, own []float64, engine *gbd.Cut) {
		strong, err := lag.Strengthened(kind, d)
		if err != nil {
			t.Fatalf("strengthened %v cut: %v", kind, err)
		}
		classical, err := lag.Cut(kind, d)
		if err != nil {
			t.Fatalf("classical %v cut: %v", kind, err)
		}
		cuts = append(cuts, checked{cut: strong, classical: classical, own: own})
		if kind == gbd.OptimalityCut {
			// The stage cut of the same multipliers: never below the strengthened one.
			sc, err := stage.Cut(d)
			if err != nil {
				t.Fatalf("stage cut: %v", err)
			}
			if sc.Tables == nil {
				t.Fatal("stage cut without tables")
			}
			cuts = append(cuts, checked{cut: sc, classical: strong, own: own})
			// With the hinges: never below the same cuts without them.
			hc, err := lag.Strengthened(kind, hinged(d))
			if err != nil {
				t.Fatalf("strengthened cut with hinges: %v", err)
			}
			hc.Hinges = hs
			cuts = append(cuts, checked{cut: hc, classical: strong, own: own})
			hsc, err := stage.Cut(hinged(d))
			if err != nil {
				t.Fatalf("stage cut with hinges: %v", err)
			}
			hsc.Hinges = hs
			cuts = append(cuts, checked{cut: hsc, classical: sc, own: own})
		}
		if engine != nil {
			cuts = append(cuts, checked{cut: *engine, classical: classical, own: own, engine: true})
		}
	}
	r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, ypb, gbd.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	withHinges := func(r *gbd.Result) int {
		n := 0
		for i := range r.Cuts {
			if r.Cuts[i].Hinges != nil {
				n++
			}
		}
		return n
	}
	if withHinges(r) == 0 && r.Iterations > 1 {
		t.Error("the engine's cuts (enum master) carry no hinges")
	}
	for i, cut := range r.Cuts {
		if d := r.Duals[i]; d != nil {
			add(cut.Kind, *d, r.Trace[cut.Iter].Y, &r.Cuts[i])
		}
	}
	// The engine's stage cuts (Settings.StageCuts with the staged master, which reads their tables).
	rs, err := (&gbd.Engine{Master: &staged.Master{}}).Solve(p, ypb, gbd.Settings{StageCuts: true})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(rs.Objective-r.Objective) > 1e-6*(1+math.Abs(r.Objective)) && r.Status == gbd.StatusOptimal {
		t.Errorf("with stage cuts the optimum is %.9g, without %.9g", rs.Objective, r.Objective)
	}
	tables := 0
	for i := range rs.Cuts {
		if rs.Cuts[i].Tables != nil {
			tables++
			cuts = append(cuts, checked{cut: rs.Cuts[i], own: rs.Trace[rs.Cuts[i].Iter].Y, engine: true})
		}
	}
	if tables == 0 && rs.Iterations > 1 {
		t.Error("the engine made no stage cut")
	}
	if withHinges(rs) == 0 && rs.Iterations > 1 {
		t.Error("the engine's stage cuts carry no hinges")
	}
	for range 8 {
		y := ypb.Float(rng.IntN(ypb.Count()), make([]float64, p.NY))
		res, err := sub.Evaluate(y, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.Duals != nil {
			add(res.Cut.Kind, *res.Duals, y, &res.Cut)
		}
	}
	for _, kind := range []gbd.CutKind{gbd.OptimalityCut, gbd.FeasibilityCut} {
		for range 4 {
			d := gbd.CutDuals{Mu: make([]float64, len(p.Ineq)), Lam: make([]float64, len(p.Eq))}
			for i := range d.Mu {
				d.Mu[i] = math.Max(0, rng.NormFloat64())
			}
			for i := range d.Lam {
				d.Lam[i] = 3 * rng.NormFloat64()
			}
			add(kind, d, nil, nil)
		}
	}

	y := make([]float64, p.NY)
	nOpt, nFeas, stronger, feasible := 0, 0, 0, 0
	for _, j := range at {
		ypb.Float(j, y)
		z := z(y)
		if !math.IsInf(z, 1) {
			feasible++
		}
		for k, c := range cuts {
			v := c.cut.Eval(y)
			if !c.engine {
				if w := c.classical.Eval(y); v < w-1e-9*(1+math.Abs(w)) {
					t.Errorf("cut %d (%v) at y=%v: strengthened %.12g below the classical %.12g", k, c.cut.Kind, y, v, w)
				} else if v > w+1e-6 {
					stronger++
				}
			}
			if math.IsInf(z, 1) {
				continue
			}
			switch c.cut.Kind {
			case gbd.OptimalityCut:
				nOpt++
				if v > z+1e-7*(1+math.Abs(z)) {
					t.Errorf("cut %d at y=%v: optimality cut %.12g above Z(y) = %.12g", k, y, v, z)
				}
			case gbd.FeasibilityCut:
				nFeas++
				if v > 1e-6 {
					t.Errorf("cut %d: feasibility cut %.3g > 0 at the feasible y=%v", k, v, y)
				}
			}
		}
	}
	for k, c := range cuts {
		if c.own == nil || c.cut.Kind != gbd.OptimalityCut {
			continue
		}
		z := z(c.own)
		if v := c.cut.Eval(c.own); v < z-1e-6*(1+math.Abs(z)) {
			t.Errorf("cut %d (engine %v): %.12g at its own y, Z = %.12g: not tight", k, c.engine, v, z)
		}
	}
	if nOpt == 0 || nFeas == 0 {
		t.Fatalf("%d optimality and %d feasibility cut values checked: too few", nOpt, nFeas)
	}
	t.Logf("%d of |Y_pb| = %d assignments (%d feasible), %d cuts: %d optimality and %d feasibility values valid; strengthened above classical at %d (cut, y) pairs",
		len(at), ypb.Count(), feasible, len(cuts), nOpt, nFeas, stronger)
}

// TestStagedBudgetKeepsTheCertificate: the staged master's step budget (gbd.Budgeted) stops
// early master steps with their incumbent, yet every solve still ends certified at the optimum
// that exact master steps certify, on 40-binary instances (one with sustained two-pump demand)
// from scratch.
func TestStagedBudgetKeepsTheCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("four 40-binary solves from scratch")
	}
	c, err := SizedConfig(40)
	if err != nil {
		t.Fatal(err)
	}
	ypb, err := Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	prof := DefaultProfile()
	rng := rand.New(rand.NewPCG(40, 5))
	for i := range 2 {
		in := Sample(rng, &c, &prof)
		if i == 1 {
			for tt := range in.Demand {
				in.Demand[tt] = 170 * (0.85 + 0.3*rng.Float64())
			}
		}
		p := Problem(&c, &in)
		var res [2]*gbd.Result
		stopped := 0
		for j, budget := range []time.Duration{-1, 0} {
			r, err := (&gbd.Engine{Master: &staged.Master{Budget: budget}}).Solve(p, ypb, gbd.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != gbd.StatusOptimal {
				t.Fatalf("instance %d, budget %v: %v (%s)", i, budget, r.Status, r.Message)
			}
			for _, it := range r.Trace {
				if it.Master == gbd.MasterStopped {
					stopped++
				}
			}
			res[j] = r
		}
		if d := math.Abs(res[0].Objective - res[1].Objective); d > gbd.DefaultEps {
			t.Errorf("instance %d: exact steps certify %.6f, budgeted %.6f", i, res[0].Objective, res[1].Objective)
		}
		t.Logf("instance %d: %.4f in %d iterations (exact steps), %d iterations with the budget (%d steps stopped by it)",
			i, res[1].Objective, res[0].Iterations, res[1].Iterations, stopped)
	}
}

// c0Pumps is the pumps of p's first block (the start rows of block 1 name one binary each).
func c0Pumps(p *gbd.Problem) []int {
	var rows []int
	for r := range p.Ineq {
		if strings.HasPrefix(p.Ineq[r].Name, "start[") && strings.HasSuffix(p.Ineq[r].Name, ",1]") {
			rows = append(rows, r)
		}
	}
	return rows
}

// blocksOf is the number of move blocks (Y_pb's stages).
func blocksOf(ypb *gbd.Admissible) int { return len(ypb.Stages) }
