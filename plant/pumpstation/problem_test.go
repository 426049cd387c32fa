package pumpstation

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gbdmpc/gbd"
)

// smallConfig is the spec's plant over a horizon of 4 steps in 2 blocks, small enough to write every
// value of a hand-made point down.
func smallConfig() Config {
	c := DefaultConfig()
	c.Horizon, c.Blocks = 4, 2
	return c
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// TestTranscriptionByHand evaluates the objective and every row at a hand-made (x, y) and compares
// them with the spec's formulas written out independently here, looking variables up by name.
func TestTranscriptionByHand(t *testing.T) {
	for _, cfg := range []Config{smallConfig(), DefaultConfig()} {
		t.Run(fmt.Sprintf("N=%d,B=%d", cfg.Horizon, cfg.Blocks), func(t *testing.T) {
			checkByHand(t, cfg)
		})
	}
}

func checkByHand(t *testing.T, c Config) {
	const (
		A, dt, href, wh, wN = 50.0, 0.25, 3.0, 0.5, 5.0
		hmin, hmax          = 1.0, 5.0
	)
	qmin := []float64{20, 30, 50}
	qmax := []float64{60, 90, 150}
	e := []float64{0.100, 0.090, 0.080}
	f := []float64{3.00, 3.60, 5.25}
	cr := []float64{0.20, 0.25, 0.30}
	gam := []float64{1.0, 1.5, 2.0}
	N, B := c.Horizon, c.Blocks
	L := N / B

	in := Instance{V: 1, Level: 2.7, PumpsOn: []int{0, 1, 0}}
	for t := range N {
		in.Demand = append(in.Demand, 40+7*float64(t))
		in.Price = append(in.Price, []float64{0.12, 0.35}[t%2])
	}
	if err := in.Validate(&c); err != nil {
		t.Fatal(err)
	}
	p := Problem(&c, &in)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.NX != 3*N+N+3*B || p.NY != 3*B {
		t.Fatalf("NX=%d NY=%d", p.NX, p.NY)
	}
	pos := map[string]int{}
	for i, n := range p.XNames {
		pos[n] = i
	}
	ypos := map[string]int{}
	for i, n := range p.YNames {
		ypos[n] = i
	}

	// A point that is off the constraints on purpose so every row has a distinct value.
	yv := func(pp, b int) float64 { return float64((pp + b) % 2) } // p, b 1-based
	qv := func(pp, t int) float64 { return 10*float64(pp) + 3*float64(t) + 0.5 }
	hv := func(t int) float64 { return 0.8 + 0.31*float64(t) }
	sv := func(pp, b int) float64 { return 0.1 * float64(pp+b) }
	x := make([]float64, p.NX)
	y := make([]float64, p.NY)
	set := func(name string, v float64) {
		i, ok := pos[name]
		if !ok {
			t.Fatalf("no variable %s", name)
		}
		x[i] = v
	}
	for pp := 1; pp <= 3; pp++ {
		for t := 0; t < N; t++ {
			set(fmt.Sprintf("q[%d,%d]", pp, t), qv(pp, t))
		}
		for b := 1; b <= B; b++ {
			set(fmt.Sprintf("s[%d,%d]", pp, b), sv(pp, b))
			y[ypos[fmt.Sprintf("y[%d,%d]", pp, b)]] = yv(pp, b)
		}
	}
	for t := 1; t <= N; t++ {
		set(fmt.Sprintf("h[%d]", t), hv(t))
	}
	h := func(t int) float64 {
		if t == 0 {
			return in.Level
		}
		return hv(t)
	}
	blk := func(t int) int { return t/L + 1 }

	// Objective, term by term.
	want := 0.0
	for t := 0; t < N; t++ {
		for pp := 1; pp <= 3; pp++ {
			q := qv(pp, t)
			power := e[pp-1]*q + f[pp-1]*math.Pow(q/qmax[pp-1], 3)
			want += in.Price[t] * power * dt
		}
	}
	for b := 1; b <= B; b++ {
		for pp := 1; pp <= 3; pp++ {
			want += cr[pp-1]*float64(L)*dt*yv(pp, b) + gam[pp-1]*sv(pp, b)
		}
	}
	for t := 1; t <= N; t++ {
		want += wh * (hv(t) - href) * (hv(t) - href)
	}
	want += wN * (hv(N) - href) * (hv(N) - href)
	got, ok := p.Objective.Eval(x, y)
	if !ok || !near(got, want, 1e-12) {
		t.Errorf("objective = %v, want %v", got, want)
	}

	// Rows as expr ≤ 0 (inequalities) and expr = 0 (equalities).
	wantEq := map[string]float64{}
	for t := 0; t < N; t++ {
		sum := 0.0
		for pp := 1; pp <= 3; pp++ {
			sum += qv(pp, t)
		}
		wantEq[fmt.Sprintf("dyn[%d]", t)] = h(t+1) - (h(t) + dt/A*(sum-in.Demand[t]))
	}
	wantIneq := map[string]float64{}
	for pp := 1; pp <= 3; pp++ {
		for t := 0; t < N; t++ {
			wantIneq[fmt.Sprintf("qmin[%d,%d]", pp, t)] = qmin[pp-1]*yv(pp, blk(t)) - qv(pp, t)
			wantIneq[fmt.Sprintf("qmax[%d,%d]", pp, t)] = qv(pp, t) - qmax[pp-1]*yv(pp, blk(t))
		}
		wantIneq[fmt.Sprintf("start[%d,1]", pp)] = yv(pp, 1) - float64(in.PumpsOn[pp-1]) - sv(pp, 1)
		for b := 2; b <= B; b++ {
			wantIneq[fmt.Sprintf("start[%d,%d]", pp, b)] = yv(pp, b) - yv(pp, b-1) - sv(pp, b)
		}
	}
	for t := 1; t <= N; t++ {
		wantIneq[fmt.Sprintf("hmin[%d]", t)] = hmin - hv(t)
		wantIneq[fmt.Sprintf("hmax[%d]", t)] = hv(t) - hmax
	}
	checkRows(t, "equality", p.Eq, wantEq, x, y)
	checkRows(t, "inequality", p.Ineq, wantIneq, x, y)

	// Box: physical ranges.
	for n, i := range pos {
		var lo, hi float64
		switch n[0] {
		case 'q':
			var pp, tt int
			fmt.Sscanf(n, "q[%d,%d]", &pp, &tt)
			lo, hi = 0, qmax[pp-1]
		case 'h':
			lo, hi = 0, 6
		case 's':
			lo, hi = 0, 1
		}
		if p.XLo[i] != lo || p.XHi[i] != hi {
			t.Errorf("%s has box [%v, %v], want [%v, %v]", n, p.XLo[i], p.XHi[i], lo, hi)
		}
	}
}

func checkRows(t *testing.T, kind string, rows []gbd.Expr, want map[string]float64, x, y []float64) {
	t.Helper()
	if len(rows) != len(want) {
		t.Errorf("%d %s rows, want %d", len(rows), kind, len(want))
	}
	for _, r := range rows {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected %s row %q", kind, r.Name)
			continue
		}
		got, ok := r.Eval(x, y)
		if !ok || !near(got, w, 1e-12) {
			t.Errorf("%s row %s = %v, want %v", kind, r.Name, got, w)
		}
	}
}

// TestSingleVariableRows: the semi-continuous, level and start rows must each involve one x
// variable, so that the engine turns them into bounds for fixed y (gbd/nlp.go).
func TestSingleVariableRows(t *testing.T) {
	c := DefaultConfig()
	in := Sample(rand.New(rand.NewPCG(3, 4)), &c, ptr(DefaultProfile()))
	p := Problem(&c, &in)
	for _, r := range p.Ineq {
		if len(r.Terms) != 0 || len(r.Idx) != 1 {
			t.Errorf("row %s has %d x entries and %d terms, want one x and no terms", r.Name, len(r.Idx), len(r.Terms))
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestAdmissibleSet checks Y_pb against the pure binary rules applied to every y ∈ {0,1}^12.
func TestAdmissibleSet(t *testing.T) {
	c := DefaultConfig()
	ypb, err := Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	y := make([]float64, 12)
	for mask := range 1 << 12 {
		for i := range y {
			y[i] = float64(mask >> (11 - i) & 1)
		}
		yy := func(p, b int) float64 { return y[(p-1)*4+b-1] } // 1-based, pump-major
		ok := true
		for b := 1; b <= 4; b++ {
			if yy(1, b)+yy(2, b)+yy(3, b) > 2 {
				ok = false
			}
		}
		for p := 1; p <= 3; p++ {
			for _, b := range []int{2, 3} {
				if yy(p, b)-yy(p, b-1) > yy(p, b+1) {
					ok = false
				}
			}
		}
		if ok {
			count++
		}
		if got := ypb.Index(y) >= 0; got != ok {
			t.Fatalf("y=%v: admissible %v, want %v", y, got, ok)
		}
	}
	if ypb.Count() != count || count != 889 {
		t.Errorf("|Y_pb| = %d, brute force %d, want 889", ypb.Count(), count)
	}
}

// TestGradientFD checks Expr.Gradient of the objective and every row against central differences
// at random interior points.
func TestGradientFD(t *testing.T) {
	c := DefaultConfig()
	prof := DefaultProfile()
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 3 {
		in := Sample(rng, &c, &prof)
		p := Problem(&c, &in)
		x := interiorPoint(rng, p)
		exprs := append([]gbd.Expr{p.Objective}, p.Ineq...)
		exprs = append(exprs, p.Eq...)
		for _, e := range exprs {
			g := make([]float64, p.NX)
			if !e.Gradient(x, 1, g) {
				t.Fatalf("trial %d: gradient of %s failed", trial, e.Name)
			}
			val := func(x []float64) []float64 { v, _ := e.EvalX(x); return []float64{v} }
			for i := range x {
				fd := centralDiff(val, x, i, 1e-6)[0]
				if math.Abs(fd-g[i]) > 1e-6*(1+math.Abs(g[i])) {
					t.Errorf("trial %d: ∂%s/∂%s = %v, finite difference %v", trial, e.Name, p.XNames[i], g[i], fd)
				}
			}
		}
	}
}

// centralDiff is ∂f/∂x_j at x by central differences with the step rel·(1 + |x_j|).
func centralDiff(f func([]float64) []float64, x []float64, j int, rel float64) []float64 {
	h := rel * (1 + math.Abs(x[j]))
	xp, xm := slices.Clone(x), slices.Clone(x)
	xp[j] += h
	xm[j] -= h
	fp, fm := f(xp), f(xm)
	out := make([]float64, len(fp))
	for i := range fp {
		out[i] = (fp[i] - fm[i]) / (2 * h)
	}
	return out
}

func interiorPoint(rng *rand.Rand, p *gbd.Problem) []float64 {
	x := make([]float64, p.NX)
	for i := range x {
		x[i] = p.XLo[i] + (0.05+0.9*rng.Float64())*(p.XHi[i]-p.XLo[i])
	}
	return x
}

// TestHessianIsAnalytic compares the curvature of the objective with the spec's second derivatives:
// π[t]·Δt·6·f_p·q/q_max³ on each flow and 2·w_h (plus 2·w_N at h[N]) on each level, through finite
// differences of the gradient.
func TestHessianIsAnalytic(t *testing.T) {
	c := DefaultConfig()
	rng := rand.New(rand.NewPCG(7, 8))
	in := Sample(rng, &c, ptr(DefaultProfile()))
	p := Problem(&c, &in)
	x := interiorPoint(rng, p)
	grad := func(x []float64) []float64 {
		g := make([]float64, p.NX)
		p.Objective.Gradient(x, 1, g)
		return g
	}
	for j := range x {
		col := centralDiff(grad, x, j, 1e-5)
		for i := range x {
			fd := col[i]
			want := 0.0
			if i == j {
				want = analyticDiag(&c, &in, x, i)
			}
			if math.Abs(fd-want) > 1e-5*(1+math.Abs(want)) {
				t.Errorf("∂²f/∂%s∂%s: finite difference %v, spec %v", p.XNames[i], p.XNames[j], fd, want)
			}
		}
	}
}

func analyticDiag(c *Config, in *Instance, x []float64, i int) float64 {
	for pp, pump := range c.Pumps {
		for t := range c.Horizon {
			if c.QIndex(pp, t) == i {
				return in.Price[t] * c.Dt * 6 * pump.F * x[i] / math.Pow(pump.QMax, 3)
			}
		}
	}
	for t := 1; t <= c.Horizon; t++ {
		if c.HIndex(t) == i {
			d := 2 * c.WTrack
			if t == c.Horizon {
				d += 2 * c.WTerminal
			}
			return d
		}
	}
	return 0
}
