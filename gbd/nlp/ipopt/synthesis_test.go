package ipopt

import (
	"math"
	"slices"
	"syscall"
	"testing"
	"time"
)

// synthesis is the continuous NLP subproblem of the process-synthesis MINLP used by the GBD
// loop, with the binaries y fixed. Variables are x = (x3, x5, x9, x11, x13, x16).
type synthesis struct {
	y, gamma    [5]float64
	u, rho1, r2 float64
}

func newSynthesis(y [5]float64) *synthesis {
	return &synthesis{y: y, gamma: [5]float64{10, 20, 15, 12, 4}, u: 10, rho1: 1.5, r2: 1.5}
}

func (s *synthesis) problem() *Problem {
	return &Problem{
		N: 6, M: 12,
		XL: []float64{0, 0, 0, 0, 0, 0},
		XU: []float64{2, 2, 2, inf(), inf(), 3},
		GL: fill(12, -inf()),
		GU: []float64{0, 0, 0, 0, 0, 0, 0, s.rho1, s.r2, 0, 0, 0},
		JacRow: []int32{
			0, 0,
			1, 1, 1, 1, 1,
			2, 2, 2, 2, 2,
			3, 3,
			4, 4, 4,
			5, 5,
			6, 6,
			7,
			8,
			9,
			10, 10,
			11, 11,
		},
		JacCol: []int32{
			3, 4,
			0, 1, 2, 3, 5,
			0, 1, 2, 3, 5,
			2, 5,
			2, 3, 5,
			3, 4,
			3, 4,
			0,
			1,
			2,
			3, 4,
			2, 5,
		},
		HessRow: []int32{0, 1, 3, 4, 4},
		HessCol: []int32{0, 1, 3, 3, 4},
		Eval:    s,
	}
}

func (s *synthesis) Objective(x []float64) (float64, bool) {
	arg := x[3] + x[4] + 1
	if arg <= 0 {
		return 0, false
	}
	c := 140.0
	for i := range s.y {
		c += s.gamma[i] * s.y[i]
	}
	return -10*x[0] - 15*x[1] - 15*x[2] + 15*x[3] + 5*x[4] - 20*x[5] +
		math.Exp(x[0]) + math.Exp(x[1]/1.2) - 60*math.Log(arg) + c, true
}

func (s *synthesis) Gradient(x, g []float64) bool {
	arg := x[3] + x[4] + 1
	if arg <= 0 {
		return false
	}
	g[0] = -10 + math.Exp(x[0])
	g[1] = -15 + math.Exp(x[1]/1.2)/1.2
	g[2] = -15
	g[3] = 15 - 60/arg
	g[4] = 5 - 60/arg
	g[5] = -20
	return true
}

func (s *synthesis) Constraints(x, g []float64) bool {
	arg := x[3] + x[4] + 1
	if arg <= 0 {
		return false
	}
	g[0] = -math.Log(arg)
	g[1] = -x[0] - x[1] - 2*x[2] + x[3] + 2*x[5]
	g[2] = -x[0] - x[1] - 0.75*x[2] + x[3] + 2*x[5]
	g[3] = x[2] - x[5]
	g[4] = 2*x[2] - x[3] - 2*x[5]
	g[5] = -0.5*x[3] + x[4]
	g[6] = 0.2*x[3] - x[4]
	g[7] = math.Exp(x[0]) - s.u*s.y[0]
	g[8] = math.Exp(x[1]/1.2) - s.u*s.y[1]
	g[9] = 1.25*x[2] - s.u*s.y[2]
	g[10] = x[3] + x[4] - s.u*s.y[3]
	g[11] = -2*x[2] + 2*x[5] - s.u*s.y[4]
	return true
}

func (s *synthesis) Jacobian(x, v []float64) bool {
	arg := x[3] + x[4] + 1
	if arg <= 0 {
		return false
	}
	copy(v, []float64{
		-1 / arg, -1 / arg,
		-1, -1, -2, 1, 2,
		-1, -1, -0.75, 1, 2,
		1, -1,
		2, -1, -2,
		-0.5, 1,
		0.2, -1,
		math.Exp(x[0]),
		math.Exp(x[1]/1.2) / 1.2,
		1.25,
		1, 1,
		-2, 2,
	})
	return true
}

func (s *synthesis) Hessian(x []float64, sigma float64, l, v []float64) bool {
	arg := x[3] + x[4] + 1
	if arg <= 0 {
		return false
	}
	e3, e5 := math.Exp(x[0]), math.Exp(x[1]/1.2)/1.44
	h := (60*sigma + l[0]) / (arg * arg) // from −60σ ln(arg) and −λ0 ln(arg)
	v[0] = (sigma + l[7]) * e3
	v[1] = (sigma + l[8]) * e5
	v[2], v[3], v[4] = h, h, h
	return true
}

var synthesisY = [5]float64{1, 0, 1, 1, 0}

var synthesisX0 = []float64{0.5, 0.2, 0.5, 1, 0.3, 0.3}

// TestSynthesisDerivatives compares the hand-written derivatives with central differences, so
// that the benchmark measures a correct problem.
func TestSynthesisDerivatives(t *testing.T) {
	s := newSynthesis(synthesisY)
	p := s.problem()
	x := []float64{0.7, 0.3, 0.9, 1.4, 0.5, 0.6}
	lam := []float64{0.3, 0.1, 0.2, 0.4, 0.5, 0.6, 0.7, 1.1, 0.9, 0.2, 0.3, 0.4}
	const sigma, h = 0.8, 1e-6
	grad, jac, hess := make([]float64, 6), make([]float64, len(p.JacRow)), make([]float64, len(p.HessRow))
	s.Gradient(x, grad)
	s.Jacobian(x, jac)
	s.Hessian(x, sigma, lam, hess)
	lagGrad := func(x []float64) []float64 { // ∇(σf + λᵀg)
		g, j := make([]float64, 6), make([]float64, len(p.JacRow))
		s.Gradient(x, g)
		s.Jacobian(x, j)
		for k := range g {
			g[k] *= sigma
		}
		for k, v := range j {
			g[p.JacCol[k]] += lam[p.JacRow[k]] * v
		}
		return g
	}
	denseJ := make([][]float64, 12)
	for i := range denseJ {
		denseJ[i] = make([]float64, 6)
	}
	for k, v := range jac {
		denseJ[p.JacRow[k]][p.JacCol[k]] += v
	}
	denseH := make([][]float64, 6)
	for i := range denseH {
		denseH[i] = make([]float64, 6)
	}
	for k, v := range hess {
		denseH[p.HessRow[k]][p.HessCol[k]] += v
	}
	for j := range 6 {
		xp, xm := slices.Clone(x), slices.Clone(x)
		xp[j] += h
		xm[j] -= h
		fp, _ := s.Objective(xp)
		fm, _ := s.Objective(xm)
		if d := (fp - fm) / (2 * h); !near(grad[j], d, 1e-6) {
			t.Errorf("∂f/∂x%d = %g, FD %g", j, grad[j], d)
		}
		gp, gm := make([]float64, 12), make([]float64, 12)
		s.Constraints(xp, gp)
		s.Constraints(xm, gm)
		for i := range 12 {
			if d := (gp[i] - gm[i]) / (2 * h); !near(denseJ[i][j], d, 1e-6) {
				t.Errorf("∂g%d/∂x%d = %g, FD %g", i, j, denseJ[i][j], d)
			}
		}
		lp, lm := lagGrad(xp), lagGrad(xm)
		for i := j; i < 6; i++ {
			if d := (lp[i] - lm[i]) / (2 * h); !near(denseH[i][j], d, 1e-5) {
				t.Errorf("∂²L/∂x%d∂x%d = %g, FD %g", i, j, denseH[i][j], d)
			}
		}
	}
}

func TestSynthesisSolves(t *testing.T) {
	s := newSynthesis(synthesisY)
	p := s.problem()
	r, err := Solve(p, synthesisX0, nil, Options{})
	if err != nil || r.Status != Solved {
		t.Fatalf("status %v err %v", r.Status, err)
	}
	checkKKT(t, p, r, 1e-6)
	// y5 = 0 forces x16 ≤ x9, y2 = 0 forces exp(x5/1.2) ≤ 1.5.
	if r.X[5] > r.X[2]+1e-6 || math.Exp(r.X[1]/1.2) > 1.5+1e-6 {
		t.Errorf("solution ignores the fixed binaries: %v", r.X)
	}
}

// BenchmarkSynthesisSubproblem measures complete Solve calls (problem creation, options,
// IpoptSolve, teardown) of the synthesis subproblem:
//
//   - default: zero Options, cold start from synthesisX0, as the GBD loop calls it;
//   - ipopt-defaults: the same with Ipopt's own algorithmic defaults (monotone mu, one mandatory
//     refinement step), the "before" of the tuning documented in doc.go;
//   - warm-restart: restarting from the solution and its multipliers, the floor for one solve.
//
// Besides ns/op it reports the median wall time and the mean process CPU time per solve; on a
// shared machine the CPU time is the steadier number.
func BenchmarkSynthesisSubproblem(b *testing.B) {
	p := newSynthesis(synthesisY).problem()
	sol, err := Solve(p, synthesisX0, nil, Options{})
	if err != nil || sol.Status != Solved {
		b.Fatalf("status %v err %v", sol.Status, err)
	}
	warm := &WarmStart{MultG: sol.MultG, MultXL: sol.MultXL, MultXU: sol.MultXU}
	cases := []struct {
		name string
		x0   []float64
		warm *WarmStart
		opt  Options
	}{
		{"default", synthesisX0, nil, Options{}},
		{"ipopt-defaults", synthesisX0, nil, Options{MonotoneMu: true, Extra: []Option{{"min_refinement_steps", 1}}}},
		{"warm-restart", sol.X, warm, Options{WarmStart: true}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var times []time.Duration
			iters := 0
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				t0 := time.Now()
				r, err := Solve(p, c.x0, c.warm, c.opt)
				times = append(times, time.Since(t0))
				if err != nil || r.Status != Solved {
					b.Fatalf("status %v err %v", r.Status, err)
				}
				iters = r.Iterations
			}
			cpu := processCPU() - cpu0
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/solve")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(times)), "cpu-ns/solve")
			b.ReportMetric(float64(iters), "iterations")
		})
	}
}

// processCPU is the user+system CPU time of the whole process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHeapRetention runs the default case of BenchmarkSynthesisSubproblem with glibc's
// initial thresholds (128 KiB: freed memory goes back to the kernel after every solve) and with
// the ones the package sets at initialisation, side by side in one process.
func BenchmarkHeapRetention(b *testing.B) {
	p := newSynthesis(synthesisY).problem()
	defer setHeapRetention(keepTrim, keepMmap)
	for _, c := range []struct {
		name       string
		trim, mmap int
	}{{"glibc-128KiB", 128 << 10, 128 << 10}, {"retained", keepTrim, keepMmap}} {
		b.Run(c.name, func(b *testing.B) {
			if !setHeapRetention(c.trim, c.mmap) {
				b.Fatal("mallopt refused the thresholds")
			}
			cpu0 := processCPU()
			for b.Loop() {
				if r, err := Solve(p, synthesisX0, nil, Options{}); err != nil || r.Status != Solved {
					b.Fatalf("status %v err %v", r.Status, err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}
