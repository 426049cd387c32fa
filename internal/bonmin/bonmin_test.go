package bonmin

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/synthesis"
)

var algorithms = []Algorithm{BBB, BOA}

// The package doc states Bonmin's default tolerances; the linked library must have them.
func TestDefaultsAreDocumented(t *testing.T) {
	d, err := LibraryDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults{AllowableGap: 0, AllowableFractionGap: 0, CutoffDecr: 1e-5, IntegerTolerance: 1e-6, TimeLimit: 1e10, NLPTol: 1e-8}
	if d != want {
		t.Errorf("library defaults %+v, package doc says %+v", d, want)
	}
}

// A bonmin.opt in the working directory, which Bonmin reads by default, changes nothing.
func TestOptionsFileIgnored(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("bonmin.opt", []byte("bonmin.cutoff -1e10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Solve(mixed(), Options{Algorithm: BBB})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Optimal || math.Abs(r.Objective-2.7274584) > 1e-6 {
		t.Errorf("with a bonmin.opt in the working directory: %v %v (%s)", r.Status, r.Objective, r.Message)
	}
}

func TestParseAlgorithm(t *testing.T) {
	for s, want := range map[string]Algorithm{"bbb": BBB, "B-BB": BBB, "boa": BOA, "B-OA": BOA} {
		if a, err := ParseAlgorithm(s); err != nil || a != want {
			t.Errorf("ParseAlgorithm(%q) = %v, %v; want %v", s, a, err, want)
		}
	}
	if _, err := ParseAlgorithm("b-hyb"); err == nil {
		t.Error("ParseAlgorithm accepted b-hyb")
	}
}

// A problem with inconsistent dimensions or a non-convex term is refused in Go, before C.
func TestSolveRefusesInvalidProblems(t *testing.T) {
	bad := knapsack()
	bad.XHi = bad.XHi[:0]
	if _, err := Solve(bad, Options{}); err == nil {
		t.Error("bounds of the wrong length accepted")
	}
	bad = knapsack()
	bad.Ineq[0].YIdx[0] = 7
	if _, err := Solve(bad, Options{}); err == nil {
		t.Error("binary index out of range accepted")
	}
	concave := knapsack()
	concave.Objective.Terms[0].Weight = -1
	if _, err := Solve(concave, Options{}); !errors.Is(err, gbd.ErrNotConvex) {
		t.Errorf("concave objective: got %v, want ErrNotConvex", err)
	}
	if _, err := Solve(knapsack(), Options{TimeLimit: -time.Second}); err == nil {
		t.Error("negative time limit accepted")
	}
}

// knapsack: min (x−3)² + y0 + 0.3·y1 s.t. x ≤ 0.5 + 2·y0 + y1, y0 + y1 ≤ 1, x ∈ [0, 4].
// The optimum is y = (1, 0), x = 2.5, objective 1.25.
func knapsack() *gbd.Problem {
	return &gbd.Problem{
		Name: "knapsack", NX: 1, XLo: []float64{0}, XHi: []float64{4}, NY: 2,
		Objective: gbd.Expr{
			Terms: []gbd.Term{{Weight: 1, Atom: gbd.AtomSquare, Idx: []int{0}, Coef: []float64{1}, Shift: -3}},
			YIdx:  []int{0, 1}, YCoef: []float64{1, 0.3},
		},
		Ineq: []gbd.Expr{{Idx: []int{0}, Coef: []float64{1}, YIdx: []int{0, 1}, YCoef: []float64{-2, -1}, Const: -0.5}},
		Pure: []gbd.PureRow{{Idx: []int{0, 1}, Coef: []float64{1, 1}, RHS: 1}},
	}
}

// mixed uses every atom, a multivariate atom argument (off-diagonal Hessian entries), an
// equality row, an unbounded variable and binaries in the objective, the rows and a pure row.
func mixed() *gbd.Problem {
	inf := math.Inf(1)
	return &gbd.Problem{
		Name: "mixed", NX: 4, XLo: []float64{0, 0, 0, 0}, XHi: []float64{3, 3, 6, inf}, NY: 3,
		Objective: gbd.Expr{
			Terms: []gbd.Term{
				{Weight: 1, Atom: gbd.AtomExp, Idx: []int{0}, Coef: []float64{0.5}},
				{Weight: -3, Atom: gbd.AtomLog, Idx: []int{1}, Coef: []float64{1}, Shift: 0.5},
				{Weight: 0.7, Atom: gbd.AtomPower, P: 1.5, Idx: []int{2}, Coef: []float64{1}, Shift: 0.1},
				{Weight: 0.4, Atom: gbd.AtomSquare, Idx: []int{0, 1, 3}, Coef: []float64{1, -1, 0.5}, Shift: 0.2},
			},
			Idx: []int{3}, Coef: []float64{0.1},
			YIdx: []int{0, 1, 2}, YCoef: []float64{1.5, 1, 0.8},
			Const: 2,
		},
		Ineq: []gbd.Expr{
			// x0³ + (x0 + x1)² ≤ 4 + 3·y0
			{Terms: []gbd.Term{
				{Weight: 1, Atom: gbd.AtomCube, Idx: []int{0}, Coef: []float64{1}},
				{Weight: 1, Atom: gbd.AtomSquare, Idx: []int{0, 1}, Coef: []float64{1, 1}},
			}, YIdx: []int{0}, YCoef: []float64{-3}, Const: -4},
			// x1 ≤ 1 + 2·y1
			{Idx: []int{1}, Coef: []float64{1}, YIdx: []int{1}, YCoef: []float64{-2}, Const: -1},
			// x2 ≥ 1.5 − y2 (the power term wants x2 small)
			{Idx: []int{2}, Coef: []float64{-1}, YIdx: []int{2}, YCoef: []float64{-1}, Const: 1.5},
		},
		// x3 = x0 + x1 − x2 + 2
		Eq:   []gbd.Expr{{Idx: []int{3, 0, 1, 2}, Coef: []float64{1, -1, -1, 1}, Const: -2}},
		Pure: []gbd.PureRow{{Idx: []int{0, 1, 2}, Coef: []float64{1, 1, 1}, RHS: 2}},
	}
}

// infeasible: x ∈ [0, 1] must reach 2.5 − 0.5·(y0 + y1), out of reach for every y.
func infeasible() *gbd.Problem {
	return &gbd.Problem{
		Name: "infeasible", NX: 1, XLo: []float64{0}, XHi: []float64{1}, NY: 2,
		Objective: gbd.Expr{Terms: []gbd.Term{{Weight: 1, Atom: gbd.AtomSquare, Idx: []int{0}, Coef: []float64{1}}},
			YIdx: []int{0, 1}, YCoef: []float64{1, 1}},
		Ineq: []gbd.Expr{{Idx: []int{0}, Coef: []float64{-1}, YIdx: []int{0, 1}, YCoef: []float64{-0.5, -0.5}, Const: 2.5}},
	}
}

// groundTruth enumerates every admissible y with the project's own NLP.
func groundTruth(t *testing.T, p *gbd.Problem) (*gbd.Admissible, *gbd.GroundTruth) {
	t.Helper()
	ypb, err := gbd.EnumerateAdmissible(p.NY, p.Pure, 0)
	if err != nil {
		t.Fatal(err)
	}
	gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return ypb, gt
}

// agrees checks a Bonmin result against the ground truth: status, objective within rel, and a
// returned point that is admissible, feasible and worth the objective reported.
func agrees(t *testing.T, name string, p *gbd.Problem, ypb *gbd.Admissible, gt *gbd.GroundTruth, r *Result, rel float64) {
	t.Helper()
	if !gt.Feasible {
		if r.Status != Infeasible {
			t.Errorf("%s: ground truth infeasible, Bonmin %v (%s)", name, r.Status, r.Message)
		}
		return
	}
	if r.Status != Optimal {
		t.Fatalf("%s: Bonmin %v (%s); ground truth %.9g at y=%v", name, r.Status, r.Message, gt.Objective, gt.Y)
	}
	if d := math.Abs(r.Objective - gt.Objective); d > rel*math.Max(math.Abs(gt.Objective), 1e-3) {
		t.Errorf("%s: Bonmin objective %.10g, ground truth %.10g (y %v vs %v)", name, r.Objective, gt.Objective, r.Y, gt.Y)
	}
	if r.Bound > r.Objective+1e-6*(1+math.Abs(r.Objective)) || math.IsNaN(r.Bound) {
		t.Errorf("%s: bound %v above the objective %v", name, r.Bound, r.Objective)
	}
	if len(r.X) != p.NX || len(r.Y) != p.NY {
		t.Fatalf("%s: solution of lengths %d/%d, want %d/%d", name, len(r.X), len(r.Y), p.NX, p.NY)
	}
	j := ypb.Index(r.Y)
	if j < 0 {
		t.Fatalf("%s: Bonmin's y=%v is not admissible", name, r.Y)
	}
	// Bonmin's y is optimal: its own S(y) (from the enumeration) is the optimum.
	if d := math.Abs(gt.Z[j] - gt.Objective); d > rel*math.Max(math.Abs(gt.Objective), 1e-3) {
		t.Errorf("%s: Bonmin's y=%v has S(y)=%.10g, optimum %.10g", name, r.Y, gt.Z[j], gt.Objective)
	}
	// The point is feasible and its objective is the one reported.
	const feasTol = 1e-6
	for i, x := range r.X {
		if x < p.XLo[i]-feasTol || x > p.XHi[i]+feasTol {
			t.Errorf("%s: x[%d]=%v outside [%v, %v]", name, i, x, p.XLo[i], p.XHi[i])
		}
	}
	for k := range p.Ineq {
		if v, ok := p.Ineq[k].Eval(r.X, r.Y); !ok || v > feasTol {
			t.Errorf("%s: inequality %d is %v at Bonmin's point", name, k, v)
		}
	}
	for k := range p.Eq {
		if v, ok := p.Eq[k].Eval(r.X, r.Y); !ok || math.Abs(v) > feasTol {
			t.Errorf("%s: equality %d is %v at Bonmin's point", name, k, v)
		}
	}
	if v, ok := p.Objective.Eval(r.X, r.Y); !ok || math.Abs(v-r.Objective) > 1e-7*(1+math.Abs(v)) {
		t.Errorf("%s: objective at Bonmin's point is %v, Bonmin reports %v", name, v, r.Objective)
	}
}

// TestMatchesEnumeration: on small problems with every atom, and on synthesis instances (feasible
// and infeasible), B-BB's and B-OA's optima equal brute-force enumeration over y with the
// project's NLP to 1e-5 relative.
func TestMatchesEnumeration(t *testing.T) {
	if testing.Short() {
		t.Skip("Bonmin solves of a dozen problems against enumeration")
	}
	problems := []*gbd.Problem{knapsack(), mixed(), infeasible()}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 3 {
		problems = append(problems, synthesis.Problem(synthesis.SampleFeasible(rng)))
	}
	noRho := synthesis.Sample(rng)
	noRho.Rho = []float64{0.5, 0.8} // E14 switches one of y1, y2 off; with ρ < 1 that one cannot hold
	problems = append(problems, synthesis.Problem(noRho))

	for _, p := range problems {
		ypb, gt := groundTruth(t, p)
		if p.Name == "knapsack" && (!gt.Feasible || math.Abs(gt.Objective-1.25) > 1e-7) {
			t.Fatalf("knapsack ground truth %v %v, want 1.25", gt.Feasible, gt.Objective)
		}
		for _, a := range algorithms {
			r, err := Solve(p, Options{Algorithm: a, TimeLimit: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			name := p.Name + "/" + a.String()
			agrees(t, name, p, ypb, gt, r, 1e-5)
			t.Logf("%s: %v obj %.8g (truth %.8g, feasible %v) y=%v nodes %d in %v", name, r.Status, r.Objective, gt.Objective, gt.Feasible, r.Y, r.Nodes, r.Time)
		}
	}
}

// TestPumpStationMatchesGroundTruth: on the first five instances of the 12-binary pump station
// that plant/pumpstation's TestGBDMatchesGroundTruth50 enumerates (same seed, same draws), Bonmin's
// optimum, B-BB's and B-OA's, equals the enumerated ground truth (889 NLPs an instance) to 1e-4
// relative.
func TestPumpStationMatchesGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("five 12-binary pump-station instances, each enumerated over 889 assignments")
	}
	c := pumpstation.DefaultConfig()
	prof := pumpstation.DefaultProfile()
	ypb, err := pumpstation.Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(50, 50))
	for i := range 5 {
		in := pumpstation.Sample(rng, &c, &prof)
		p := pumpstation.Problem(&c, &in)
		gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range algorithms {
			r, err := Solve(p, Options{Algorithm: a, TimeLimit: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			agrees(t, "pumpstation/"+a.String(), p, ypb, gt, r, 1e-4)
			t.Logf("instance %d: %v %v obj %.8g (truth %.8g) y=%v nodes %d in %v", i, a, r.Status, r.Objective, gt.Objective, r.Y, r.Nodes, r.Time)
		}
	}
}

// TestTimeLimit: B-BB on a 40-binary pump station, which it needs several seconds and about a
// hundred nodes to prove, stopped after half a second ends with TimeLimit (with an incumbent no
// better than the optimum, or none) soon after the limit.
func TestTimeLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a Bonmin solve of a 40-binary pump station")
	}
	c, err := pumpstation.SizedConfig(40)
	if err != nil {
		t.Fatal(err)
	}
	prof := pumpstation.DefaultProfile()
	in := pumpstation.Sample(rand.New(rand.NewPCG(2026, 40)), &c, &prof)
	p := pumpstation.Problem(&c, &in)
	r, err := Solve(p, Options{Algorithm: BBB, TimeLimit: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != TimeLimit || r.Time > 10*time.Second {
		t.Fatalf("status %v (%s) after %v, want time_limit soon after 0.5 s", r.Status, r.Message, r.Time)
	}
	if r.Y != nil && (len(r.Y) != p.NY || !(r.Bound <= r.Objective+1e-9)) {
		t.Errorf("incumbent y=%v objective %v, bound %v", r.Y, r.Objective, r.Bound)
	}
	t.Logf("%v after %v: objective %v, bound %v, %d nodes, %s", r.Status, r.Time, r.Objective, r.Bound, r.Nodes, r.Message)
}
