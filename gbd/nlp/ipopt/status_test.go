package ipopt

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// infeasibleDisk: x0² + x1² ≤ 1 and x0 + x1 ≥ 3 cannot both hold (max of x0+x1 on the disk is √2).
func infeasibleDisk() *Problem {
	return &Problem{
		N: 2, M: 2, XL: fill(2, -inf()), XU: fill(2, inf()),
		GL: []float64{-inf(), 3}, GU: []float64{1, inf()},
		JacRow: []int32{0, 0, 1, 1}, JacCol: []int32{0, 1, 0, 1},
		HessRow: []int32{0, 1}, HessCol: []int32{0, 1},
		Eval: &funcEval{
			f:    func(x []float64) float64 { return x[0] + 2*x[1] },
			grad: func(_, g []float64) { g[0], g[1] = 1, 2 },
			con: func(x, g []float64) {
				g[0], g[1] = x[0]*x[0]+x[1]*x[1], x[0]+x[1]
			},
			jac: func(x, v []float64) { v[0], v[1], v[2], v[3] = 2*x[0], 2*x[1], 1, 1 },
			hess: func(_ []float64, _ float64, l, v []float64) {
				v[0], v[1] = 2*l[0], 2*l[0]
			},
		},
	}
}

// rosenbrock in n dimensions; from the classic start (−1.2, 1, …) Ipopt needs a few dozen
// iterations, enough to trip small iteration and CPU limits. burn adds deterministic CPU work
// to each objective evaluation.
func rosenbrock(n, burn int) *Problem {
	var hr, hc []int32
	for i := range n {
		if i > 0 {
			hr, hc = append(hr, int32(i)), append(hc, int32(i-1))
		}
		hr, hc = append(hr, int32(i)), append(hc, int32(i))
	}
	return &Problem{
		N: n, XL: fill(n, -inf()), XU: fill(n, inf()), HessRow: hr, HessCol: hc,
		Eval: &funcEval{
			f: func(x []float64) float64 {
				s := 0.0
				for k := range burn {
					s += math.Sqrt(float64(k))
				}
				f := 0.0
				for i := 0; i+1 < n; i++ {
					a, b := x[i+1]-x[i]*x[i], 1-x[i]
					f += 100*a*a + b*b
				}
				return f + 0*s
			},
			grad: func(x, g []float64) {
				clear(g)
				for i := 0; i+1 < n; i++ {
					a := x[i+1] - x[i]*x[i]
					g[i] += -400*x[i]*a - 2*(1-x[i])
					g[i+1] += 200 * a
				}
			},
			hess: func(x []float64, s float64, _, v []float64) {
				clear(v)
				// Entries are ordered (0,0), (1,0), (1,1), (2,1), (2,2), ...
				for i := 0; i+1 < n; i++ {
					d := 2 * i // index of (i,i)
					v[d] += s * (1200*x[i]*x[i] - 400*x[i+1] + 2)
					v[d+1] += s * (-400 * x[i])
					v[d+2] += s * 200
				}
			},
		},
	}
}

func rosenStart(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1
		if i%2 == 0 {
			x[i] = -1.2
		}
	}
	return x
}

func TestRosenbrockSolves(t *testing.T) {
	p := rosenbrock(4, 0)
	r, err := Solve(p, rosenStart(4), nil, Options{})
	if err != nil || r.Status != Solved {
		t.Fatalf("status %v err %v", r.Status, err)
	}
	checkVec(t, "X", r.X, fill(4, 1), 1e-6)
	checkKKT(t, p, r, 1e-6)
}

func TestInfeasible(t *testing.T) {
	r, err := Solve(infeasibleDisk(), []float64{0, 0}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != InfeasibleProblemDetected || !r.Status.Infeasible() || r.Status.Ok() {
		t.Fatalf("status %v, want InfeasibleProblemDetected", r.Status)
	}
	// The last iterate minimises the violation: on the circle towards (1,1)/√2.
	checkVec(t, "X", r.X, []float64{math.Sqrt2 / 2, math.Sqrt2 / 2}, 1e-3)
	// Pins the behaviour doc.go describes: multipliers of the ℓ1 feasibility problem (1/√2 on
	// the disk, −1 on the violated x0+x1 ≥ 3) times resto_penalty_parameter = 1000.
	checkVec(t, "MultG", r.MultG, []float64{1000 / math.Sqrt2, -1000}, 1e-3)
	// Ipopt's adaptive default oracle (quality-function) took 516 iterations here; monotone and
	// the probing oracle this package uses take 15–21.
	if r.Iterations > 100 {
		t.Errorf("%d iterations to detect infeasibility", r.Iterations)
	}
}

func TestMaxIter(t *testing.T) {
	r, err := Solve(rosenbrock(4, 0), rosenStart(4), nil, Options{MaxIter: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != MaximumIterationsExceeded || r.Status.Ok() {
		t.Fatalf("status %v, want MaximumIterationsExceeded", r.Status)
	}
	if r.Iterations != 3 {
		t.Errorf("Iterations = %d, want 3", r.Iterations)
	}
}

func TestMaxCPUTime(t *testing.T) {
	// Each objective evaluation burns ~1 ms of CPU and the problem needs dozens of iterations,
	// so the process's user time is bound to pass 1 µs before Ipopt converges.
	r, err := Solve(rosenbrock(10, 1_000_000), rosenStart(10), nil, Options{MaxCPUSeconds: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != MaximumCpuTimeExceeded {
		t.Fatalf("status %v, want MaximumCpuTimeExceeded", r.Status)
	}
}

func TestEvaluatorFalseBacktracks(t *testing.T) {
	// min x − ln x with x unbounded: the first Newton step from 3 lands at −3, outside ln's
	// domain, so the evaluator must say false and Ipopt must backtrack to reach x = 1.
	ev := &funcEval{
		f:      func(x []float64) float64 { return x[0] - math.Log(x[0]) },
		grad:   func(x, g []float64) { g[0] = 1 - 1/x[0] },
		hess:   func(x []float64, s float64, _, v []float64) { v[0] = s / (x[0] * x[0]) },
		domain: func(x []float64) bool { return x[0] > 0 },
	}
	p := &Problem{N: 1, XL: []float64{-inf()}, XU: []float64{inf()},
		HessRow: []int32{0}, HessCol: []int32{0}, Eval: ev}
	r, err := Solve(p, []float64{3}, nil, Options{})
	if err != nil || r.Status != Solved {
		t.Fatalf("status %v err %v", r.Status, err)
	}
	checkVec(t, "X", r.X, []float64{1}, 1e-7)
	if ev.fails == 0 {
		t.Error("evaluator never returned false; the test does not exercise backtracking")
	}
}

func TestEvaluatorFalseAtStart(t *testing.T) {
	p := quadUnconstrained()
	p.Eval.(*funcEval).domain = func(x []float64) bool { return x[0] < 10 }
	r, err := Solve(p, []float64{20, 0}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != InvalidNumberDetected {
		t.Fatalf("status %v, want InvalidNumberDetected", r.Status)
	}
}

type panicEval struct{ funcEval }

func (e *panicEval) Gradient(x, g []float64) bool { panic(errors.New("boom")) }

func TestPanicInCallback(t *testing.T) {
	p := quadUnconstrained()
	p.Eval = &panicEval{*p.Eval.(*funcEval)}
	_, err := Solve(p, []float64{0, 0}, nil, Options{})
	var pe *CallbackPanicError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *CallbackPanicError", err)
	}
	if pe.Callback != "Gradient" || !strings.Contains(err.Error(), "boom") || len(pe.Stack) == 0 {
		t.Errorf("unexpected panic error %+v", pe)
	}
	if pe.Unwrap() == nil || pe.Unwrap().Error() != "boom" {
		t.Errorf("Unwrap = %v", pe.Unwrap())
	}
	// The library must be usable afterwards.
	r, err := Solve(quadUnconstrained(), []float64{0, 0}, nil, Options{})
	if err != nil || r.Status != Solved {
		t.Fatalf("solve after panic: %v %v", r.Status, err)
	}
}

func TestIgnoresOptionFileInWorkingDir(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "ipopt.opt"), []byte("max_iter 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(d)
	r, err := Solve(rosenbrock(2, 0), rosenStart(2), nil, Options{})
	if err != nil || r.Status != Solved {
		t.Fatalf("status %v err %v: ./ipopt.opt was read", r.Status, err)
	}
}

func TestStatusString(t *testing.T) {
	for s, name := range statusNames {
		if s.String() != name {
			t.Errorf("%d: %q", int(s), s.String())
		}
	}
	if len(statusNames) != 19 {
		t.Errorf("%d statuses named, Ipopt 3.11 has 19", len(statusNames))
	}
	if Status(42).String() != "Status(42)" {
		t.Error(Status(42).String())
	}
	if !Solved.Ok() || !SolvedToAcceptableLevel.Ok() || FeasiblePointFound.Ok() || MaximumIterationsExceeded.Ok() {
		t.Error("Ok() wrong")
	}
}
