package ipopt

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestValidation(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name  string
		edit  func(p *Problem, x0 *[]float64, w **WarmStart, o *Options)
		field string // expected ProblemError.Field
	}{
		{"nil evaluator", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.Eval = nil }, "Eval"},
		{"N zero", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.N = 0 }, "N"},
		{"M negative", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.M = -1 }, "M"},
		{"x0 short", func(_ *Problem, x0 *[]float64, _ **WarmStart, _ *Options) { *x0 = (*x0)[:1] }, "x0"},
		{"x0 NaN", func(_ *Problem, x0 *[]float64, _ **WarmStart, _ *Options) { (*x0)[1] = nan }, "x0"},
		{"XL short", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.XL = p.XL[:1] }, "XL"},
		{"XU NaN", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.XU[0] = nan }, "XU"},
		{"XL +Inf", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.XL[0] = math.Inf(1) }, "XL"},
		{"crossed bounds", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.XL[1], p.XU[1] = 2, 1 }, "XL"},
		{"GU NaN", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.GU[0] = nan }, "GU"},
		{"GL long", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.GL = append(p.GL, 0) }, "GL"},
		{"crossed constraint bounds", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.GL[0] = 3 }, "GL"},
		{"jac row out of range", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.JacRow[1] = 1 }, "JacRow"},
		{"jac col negative", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.JacCol[0] = -1 }, "JacCol"},
		{"jac length mismatch", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.JacCol = p.JacCol[:1] }, "JacCol"},
		{"jac empty with M > 0", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) {
			p.JacRow, p.JacCol = nil, nil
		}, "JacRow"},
		{"jac with M == 0", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) {
			p.M, p.GL, p.GU = 0, nil, nil
		}, "JacRow"},
		{"hessian upper triangle", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) {
			p.HessRow, p.HessCol = []int32{0, 0}, []int32{0, 1}
		}, "HessRow"},
		{"hessian col out of range", func(p *Problem, _ *[]float64, _ **WarmStart, _ *Options) { p.HessCol[1] = 2 }, "HessCol"},
		{"warm start missing", func(_ *Problem, _ *[]float64, _ **WarmStart, o *Options) { o.WarmStart = true }, "WarmStart"},
		{"warm start short", func(_ *Problem, _ *[]float64, w **WarmStart, o *Options) {
			o.WarmStart = true
			*w = &WarmStart{MultG: []float64{0}, MultXL: []float64{0}, MultXU: []float64{0, 0}}
		}, "MultXL"},
		{"negative tol", func(_ *Problem, _ *[]float64, _ **WarmStart, o *Options) { o.Tol = -1 }, "Options.Tol"},
		{"NaN cpu limit", func(_ *Problem, _ *[]float64, _ **WarmStart, o *Options) { o.MaxCPUSeconds = nan }, "Options.MaxCPUSeconds"},
		{"negative max iter", func(_ *Problem, _ *[]float64, _ **WarmStart, o *Options) { o.MaxIter = -3 }, "Options.MaxIter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := circleDist(1, -inf(), 2)()
			x0 := []float64{0, 0}
			var w *WarmStart
			var o Options
			c.edit(p, &x0, &w, &o)
			_, err := Solve(p, x0, w, o)
			var pe *ProblemError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidProblem) {
				t.Fatalf("err = %v, want *ProblemError", err)
			}
			if pe.Field != c.field {
				t.Errorf("Field = %q, want %q (%v)", pe.Field, c.field, err)
			}
		})
	}
	if _, err := Solve(nil, nil, nil, Options{}); !errors.Is(err, ErrInvalidProblem) {
		t.Errorf("nil problem: %v", err)
	}
}

// TestOptionErrors checks that options Ipopt rejects come back as *OptionError naming the C call.
// Ipopt prints its own complaint to stdout for these; that is expected test output.
func TestOptionErrors(t *testing.T) {
	cases := []struct {
		name string
		opt  Option
		call string
	}{
		{"unknown name", Option{"no_such_option", "yes"}, "AddIpoptStrOption"},
		{"bad string value", Option{"mu_strategy", "sideways"}, "AddIpoptStrOption"},
		{"float out of range", Option{"tol", -1.0}, "AddIpoptNumOption"},
		{"int given as float", Option{"max_iter", 10.0}, "AddIpoptNumOption"},
		{"int out of C range", Option{"max_iter", math.MaxInt32 + 1}, "AddIpoptIntOption"},
		{"unsupported Go type", Option{"tol", float32(1e-8)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Solve(quadUnconstrained(), []float64{0, 0}, nil, Options{Extra: []Option{c.opt}})
			var oe *OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("err = %v, want *OptionError", err)
			}
			if oe.Call != c.call || oe.Name != c.opt.Name {
				t.Errorf("got %+v, want call %q", oe, c.call)
			}
			if c.call != "" && !strings.Contains(err.Error(), c.call) {
				t.Errorf("message %q does not name %s", err, c.call)
			}
		})
	}
}

// TestExtraOverrides checks that Extra comes last and wins over the typed fields.
func TestExtraOverrides(t *testing.T) {
	r, err := Solve(rosenbrock(4, 0), rosenStart(4), nil,
		Options{MaxIter: 100, Extra: []Option{{"max_iter", 2}}})
	if err != nil || r.Status != MaximumIterationsExceeded || r.Iterations != 2 {
		t.Fatalf("%v after %d iterations, err %v", r.Status, r.Iterations, err)
	}
}

// TestSolveError covers an option that each Add*Option call accepts but IpoptSolve rejects when
// it checks option consistency (mumps_pivtolmax must not be below mumps_pivtol).
func TestSolveError(t *testing.T) {
	r, err := Solve(quadUnconstrained(), []float64{0, 0}, nil,
		Options{Extra: []Option{{"mumps_pivtol", 0.5}, {"mumps_pivtolmax", 0.1}}})
	var se *SolveError
	if !errors.As(err, &se) || se.Status != InvalidOption || r.Status != InvalidOption {
		t.Fatalf("err = %v, status %v; want *SolveError with InvalidOption", err, r.Status)
	}
	if !strings.Contains(err.Error(), "IpoptSolve") {
		t.Errorf("message %q does not name IpoptSolve", err)
	}
}
