package ipopt

import (
	"math"
	"testing"

	"gbdmpc/gbd/nlp"
)

// An acceptable point is not a solution: the adapter must never report it as Solved.
func TestMapStatus(t *testing.T) {
	for st, want := range map[Status]nlp.Status{
		Solved:                    nlp.Solved,
		SolvedToAcceptableLevel:   nlp.Failed,
		InfeasibleProblemDetected: nlp.Infeasible,
		DivergingIterates:         nlp.Unbounded,
		UserRequestedStop:         nlp.Stopped,
		MaximumCpuTimeExceeded:    nlp.Stopped,
		MaximumIterationsExceeded: nlp.IterationLimit,
		RestorationFailed:         nlp.Failed,
		ErrorInStepComputation:    nlp.Failed,
		InvalidNumberDetected:     nlp.Failed,
		InternalError:             nlp.Failed,
	} {
		if got := MapStatus(st); got != want {
			t.Errorf("MapStatus(%v) = %v, want %v", st, got, want)
		}
	}
}

// quadEval is min (x0−1)² + (x1−2)² s.t. x0 + x1 ≤ 2.
type quadEval struct{}

func (quadEval) Objective(x []float64) (float64, bool) {
	return (x[0]-1)*(x[0]-1) + (x[1]-2)*(x[1]-2), true
}
func (quadEval) Gradient(x, g []float64) bool {
	g[0], g[1] = 2*(x[0]-1), 2*(x[1]-2)
	return true
}
func (quadEval) Constraints(x, g []float64) bool { g[0] = x[0] + x[1]; return true }
func (quadEval) Jacobian(x, v []float64) bool    { v[0], v[1] = 1, 1; return true }
func (quadEval) Hessian(x []float64, of float64, l, v []float64) bool {
	v[0], v[1] = 2*of, 2*of
	return true
}

// The adapter solves through Ipopt with the neutral contract's tolerance and conventions.
func TestSolverAdapter(t *testing.T) {
	p := &nlp.Problem{N: 2, M: 1,
		XL: []float64{math.Inf(-1), math.Inf(-1)}, XU: []float64{math.Inf(1), math.Inf(1)},
		GL: []float64{math.Inf(-1)}, GU: []float64{2},
		JacRow: []int32{0, 0}, JacCol: []int32{0, 1}, HessRow: []int32{0, 1}, HessCol: []int32{0, 1},
		Eval: quadEval{}}
	for _, conservative := range []bool{false, true} {
		r, err := Solver{}.Solve(p, []float64{0, 0}, nlp.Options{Conservative: conservative})
		if err != nil || r.Status != nlp.Solved {
			t.Fatalf("conservative=%v: %v %v", conservative, err, r.Status)
		}
		// Optimum (0.5, 1.5), λ = 1, objective 0.5, to Ipopt's bound relaxation (1e-8 relative).
		if math.Abs(r.X[0]-0.5) > 1e-7 || math.Abs(r.X[1]-1.5) > 1e-7 || math.Abs(r.MultG[0]-1) > 1e-6 || math.Abs(r.Obj-0.5) > 1e-7 {
			t.Errorf("conservative=%v: x %v λ %v obj %v", conservative, r.X, r.MultG, r.Obj)
		}
	}
	stop := func() bool { return true }
	if r, err := (Solver{}).Solve(p, []float64{0, 0}, nlp.Options{Stop: stop}); err != nil || r.Status != nlp.Stopped {
		t.Errorf("stop: %v %v", err, r.Status)
	}
	if _, err := (Solver{}).Solve(p, []float64{0}, nlp.Options{}); err == nil {
		t.Error("a short x0 was accepted")
	}
}
