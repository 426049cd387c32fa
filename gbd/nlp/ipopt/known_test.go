package ipopt

import (
	"math"
	"slices"
	"testing"
)

// knownCase is a convex NLP whose solution and multipliers are known in closed form. A nil want
// slice is not checked; every case is additionally run through checkKKT.
type knownCase struct {
	name                  string
	p                     func() *Problem
	x0                    []float64
	x                     []float64
	obj                   float64
	multG, multXL, multXU []float64
	tol                   float64
}

// quadUnconstrained: min x0² + x0x1 + x1² − 3x0. ∇f = 0 gives x = (2, −1), f = −3.
func quadUnconstrained() *Problem {
	return &Problem{
		N: 2, XL: fill(2, -inf()), XU: fill(2, inf()),
		HessRow: []int32{0, 1, 1}, HessCol: []int32{0, 0, 1},
		Eval: &funcEval{
			f: func(x []float64) float64 { return x[0]*x[0] + x[0]*x[1] + x[1]*x[1] - 3*x[0] },
			grad: func(x, g []float64) {
				g[0] = 2*x[0] + x[1] - 3
				g[1] = x[0] + 2*x[1]
			},
			hess: func(_ []float64, s float64, _, v []float64) { v[0], v[1], v[2] = 2*s, s, 2*s },
		},
	}
}

// circleDist: min (x0−2)² + (x1−2)² s.t. GL ≤ a·x ≤ GU with a = (sign, sign). With sign = 1,
// GU = 2 the upper side is active at x = (1,1): ∇f = (−2,−2) = −λ·(1,1), so λ = +2. With
// sign = −1, GL = −2 the lower side is active at the same point: (−2,−2) = −λ·(−1,−1), λ = −2.
func circleDist(sign, gl, gu float64) func() *Problem {
	return func() *Problem {
		return &Problem{
			N: 2, M: 1, XL: fill(2, -inf()), XU: fill(2, inf()), GL: []float64{gl}, GU: []float64{gu},
			JacRow: []int32{0, 0}, JacCol: []int32{0, 1},
			HessRow: []int32{0, 1}, HessCol: []int32{0, 1},
			Eval: &funcEval{
				f: func(x []float64) float64 { return (x[0]-2)*(x[0]-2) + (x[1]-2)*(x[1]-2) },
				grad: func(x, g []float64) {
					g[0], g[1] = 2*(x[0]-2), 2*(x[1]-2)
				},
				con: func(x, g []float64) { g[0] = sign * (x[0] + x[1]) },
				jac: func(_, v []float64) { v[0], v[1] = sign, sign },
				hess: func(_ []float64, s float64, _, v []float64) {
					v[0], v[1] = 2*s, 2*s
				},
			},
		}
	}
}

// eqQuad: min |x|² s.t. x0 + 2x1 + 3x2 = 14. x = 14·a/|a|² = (1,2,3); 2x + λa = 0 gives λ = −2,
// which is −∂f*/∂b for f*(b) = b²/14 at b = 14.
func eqQuad() *Problem {
	return &Problem{
		N: 3, M: 1, XL: fill(3, -inf()), XU: fill(3, inf()), GL: []float64{14}, GU: []float64{14},
		JacRow: []int32{0, 0, 0}, JacCol: []int32{0, 1, 2},
		HessRow: []int32{0, 1, 2}, HessCol: []int32{0, 1, 2},
		Eval: &funcEval{
			f: func(x []float64) float64 { return x[0]*x[0] + x[1]*x[1] + x[2]*x[2] },
			grad: func(x, g []float64) {
				g[0], g[1], g[2] = 2*x[0], 2*x[1], 2*x[2]
			},
			con: func(x, g []float64) { g[0] = x[0] + 2*x[1] + 3*x[2] },
			jac: func(_, v []float64) { v[0], v[1], v[2] = 1, 2, 3 },
			hess: func(_ []float64, s float64, _, v []float64) {
				v[0], v[1], v[2] = 2*s, 2*s, 2*s
			},
		},
	}
}

// boxQuad: min (x0+1)² + (x1−3)², 0 ≤ x0 ≤ 5, −1 ≤ x1 ≤ 2. x = (0, 2); x0 sits on its lower
// bound with ∂f/∂x0 = 2 = zL0, x1 on its upper bound with ∂f/∂x1 = −2 = −zU1.
func boxQuad() *Problem {
	return &Problem{
		N: 2, XL: []float64{0, -1}, XU: []float64{5, 2},
		HessRow: []int32{0, 1}, HessCol: []int32{0, 1},
		Eval: &funcEval{
			f: func(x []float64) float64 { return (x[0]+1)*(x[0]+1) + (x[1]-3)*(x[1]-3) },
			grad: func(x, g []float64) {
				g[0], g[1] = 2*(x[0]+1), 2*(x[1]-3)
			},
			hess: func(_ []float64, s float64, _, v []float64) { v[0], v[1] = 2*s, 2*s },
		},
	}
}

// expLog: min −ln x0 − ln x1 s.t. exp(x0−1) + x1 ≤ 2, x > 0. At x = (1,1): −1/x1 + λ = 0 gives
// λ = 1, and −1/x0 + λ·e⁰ = 0 holds too. f = 0.
func expLog() *Problem {
	return &Problem{
		N: 2, M: 1, XL: []float64{1e-9, 1e-9}, XU: fill(2, inf()), GL: []float64{-inf()}, GU: []float64{2},
		JacRow: []int32{0, 0}, JacCol: []int32{0, 1},
		HessRow: []int32{0, 1}, HessCol: []int32{0, 1},
		Eval: &funcEval{
			f: func(x []float64) float64 { return -math.Log(x[0]) - math.Log(x[1]) },
			grad: func(x, g []float64) {
				g[0], g[1] = -1/x[0], -1/x[1]
			},
			con: func(x, g []float64) { g[0] = math.Exp(x[0]-1) + x[1] },
			jac: func(x, v []float64) { v[0], v[1] = math.Exp(x[0]-1), 1 },
			hess: func(x []float64, s float64, l, v []float64) {
				v[0] = s/(x[0]*x[0]) + l[0]*math.Exp(x[0]-1)
				v[1] = s / (x[1] * x[1])
			},
			domain: func(x []float64) bool { return x[0] > 0 && x[1] > 0 },
		},
	}
}

// expSum: min e^x0 + e^x1 s.t. x0 + x1 ≥ 1. By symmetry x = (½,½); e^½ + λ = 0, so λ = −√e on
// the active lower side.
func expSum() *Problem {
	return &Problem{
		N: 2, M: 1, XL: fill(2, -inf()), XU: fill(2, inf()), GL: []float64{1}, GU: []float64{inf()},
		JacRow: []int32{0, 0}, JacCol: []int32{0, 1},
		HessRow: []int32{0, 1}, HessCol: []int32{0, 1},
		Eval: &funcEval{
			f: func(x []float64) float64 { return math.Exp(x[0]) + math.Exp(x[1]) },
			grad: func(x, g []float64) {
				g[0], g[1] = math.Exp(x[0]), math.Exp(x[1])
			},
			con: func(x, g []float64) { g[0] = x[0] + x[1] },
			jac: func(_, v []float64) { v[0], v[1] = 1, 1 },
			hess: func(x []float64, s float64, _, v []float64) {
				v[0], v[1] = s*math.Exp(x[0]), s*math.Exp(x[1])
			},
		},
	}
}

// fixedVar: min (x0−1)² + (x1−2)² + x0x1 with x1 fixed at 3: 2(x0−1) + 3 = 0 gives x0 = −½,
// f = 1.75. The multiplier the fixed bound "should" carry is ∂f/∂x1 = 2(3−2) + x0 = 1.5.
func fixedVar() *Problem {
	return &Problem{
		N: 2, XL: []float64{-inf(), 3}, XU: []float64{inf(), 3},
		HessRow: []int32{0, 1, 1}, HessCol: []int32{0, 0, 1},
		Eval: &funcEval{
			f: func(x []float64) float64 { return (x[0]-1)*(x[0]-1) + (x[1]-2)*(x[1]-2) + x[0]*x[1] },
			grad: func(x, g []float64) {
				g[0], g[1] = 2*(x[0]-1)+x[1], 2*(x[1]-2)+x[0]
			},
			hess: func(_ []float64, s float64, _, v []float64) { v[0], v[1], v[2] = 2*s, s, 2*s },
		},
	}
}

var knownCases = []knownCase{
	{name: "unconstrained quadratic", p: quadUnconstrained, x0: []float64{0, 0},
		x: []float64{2, -1}, obj: -3, tol: 1e-7},
	{name: "active upper linear inequality", p: circleDist(1, -inf(), 2), x0: []float64{0, 0},
		x: []float64{1, 1}, obj: 2, multG: []float64{2}, tol: 1e-7},
	{name: "active lower linear inequality", p: circleDist(-1, -2, inf()), x0: []float64{0, 0},
		x: []float64{1, 1}, obj: 2, multG: []float64{-2}, tol: 1e-7},
	{name: "equality constrained quadratic", p: eqQuad, x0: []float64{0, 0, 0},
		x: []float64{1, 2, 3}, obj: 14, multG: []float64{-2}, tol: 1e-7},
	{name: "active variable bounds", p: boxQuad, x0: []float64{1, 0},
		x: []float64{0, 2}, obj: 2, multXL: []float64{2, 0}, multXU: []float64{0, 2}, tol: 1e-6},
	{name: "exp log", p: expLog, x0: []float64{0.5, 0.5},
		x: []float64{1, 1}, obj: 0, multG: []float64{1}, tol: 1e-7},
	{name: "exp lower inequality", p: expSum, x0: []float64{2, 2},
		x: []float64{0.5, 0.5}, obj: 2 * math.Exp(0.5), multG: []float64{-math.Exp(0.5)}, tol: 1e-7},
	// Ipopt 3.11 returns zL = zU = 0 for a fixed variable (make_parameter removes it from the
	// problem it solves); see doc.go.
	{name: "fixed variable", p: fixedVar, x0: []float64{0, 3},
		x: []float64{-0.5, 3}, obj: 1.75, multXL: []float64{0, 0}, multXU: []float64{0, 0}, tol: 1e-7},
}

// TestFixedVariableMultipliers pins what doc.go says about fixed variables: Ipopt 3.11 returns
// zero bound multipliers for them, and the stationarity residual gives the real one. Problem:
// min (x0−2)² + (x1−2)² s.t. x0 + x1 ≤ 2 with x1 fixed at 1.5, so x0 = 0.5, λ = 3 and
// r1 = 2(1.5−2) + λ = 2, i.e. z_L1 = 2 would hold x1 up.
func TestFixedVariableMultipliers(t *testing.T) {
	p := circleDist(1, -inf(), 2)()
	p.XL[1], p.XU[1] = 1.5, 1.5
	r, err := Solve(p, []float64{0, 1.5}, nil, Options{})
	if err != nil || r.Status != Solved {
		t.Fatalf("%v %v", r.Status, err)
	}
	checkVec(t, "X", r.X, []float64{0.5, 1.5}, 1e-7)
	checkVec(t, "MultG", r.MultG, []float64{3}, 1e-7)
	checkVec(t, "MultXL", r.MultXL, []float64{0, 0}, 1e-7)
	checkVec(t, "MultXU", r.MultXU, []float64{0, 0}, 1e-7)
	if r.X[1] != 1.5 {
		t.Errorf("fixed x1 = %v, want exactly 1.5", r.X[1])
	}
	grad := make([]float64, 2)
	p.Eval.Gradient(r.X, grad)
	if r1 := grad[1] + r.MultG[0]; !near(r1, 2, 1e-7) {
		t.Errorf("stationarity residual of fixed x1 = %v, want 2", r1)
	}
	checkKKT(t, p, r, 1e-6)
}

func TestKnownAnswers(t *testing.T) {
	for _, c := range knownCases {
		t.Run(c.name, func(t *testing.T) {
			p := c.p()
			r, err := Solve(p, c.x0, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != Solved || !r.Status.Ok() {
				t.Fatalf("status %v", r.Status)
			}
			checkVec(t, "X", r.X, c.x, c.tol)
			if !near(r.Obj, c.obj, c.tol) {
				t.Errorf("Obj = %.10g, want %.10g", r.Obj, c.obj)
			}
			checkVec(t, "MultG", r.MultG, c.multG, c.tol)
			checkVec(t, "MultXL", r.MultXL, c.multXL, c.tol)
			checkVec(t, "MultXU", r.MultXU, c.multXU, c.tol)
			checkKKT(t, p, r, 1e-6)
			if r.Iterations < 1 {
				t.Errorf("Iterations = %d, want ≥ 1", r.Iterations)
			}
		})
	}
}

// TestStopCallback: a Stop hook that fires at the third iteration ends the solve with
// UserRequestedStop, which is how callers enforce a wall-clock deadline.
func TestStopCallback(t *testing.T) {
	calls := 0
	res, err := Solve(rosenbrock(2, 0), rosenStart(2), nil, Options{Stop: func() bool { calls++; return calls >= 3 }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != UserRequestedStop || calls != 3 {
		t.Fatalf("status %s after %d calls, want UserRequestedStop after 3", res.Status, calls)
	}
}

// TestStopBeforeTheSolve: a caller whose time ran out (while it waited for the lock, say) gets the
// first-iteration stop at once: UserRequestedStop, no iterations, x0 back, no error.
func TestStopBeforeTheSolve(t *testing.T) {
	calls := 0
	x0 := rosenStart(2)
	res, err := Solve(rosenbrock(2, 0), x0, nil, Options{Stop: func() bool { calls++; return true }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != UserRequestedStop || res.Iterations != 0 || calls != 1 || !slices.Equal(res.X, x0) {
		t.Fatalf("status %s, %d iterations, %d Stop calls, x %v: want an immediate stop at x0", res.Status, res.Iterations, calls, res.X)
	}
}
