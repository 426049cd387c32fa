package pumpstation

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/internal/knob"
	"gbdmpc/mpc"
)

// TestRowIndices: the row helpers that ShiftDuals relies on name the rows Problem writes.
func TestRowIndices(t *testing.T) {
	c := DefaultConfig()
	in := SampleAt(rand.New(rand.NewPCG(1, 1)), &c, ptr(DefaultProfile()), 3)
	p := Problem(&c, &in)
	if len(p.Ineq) != c.NIneq() || len(p.Eq) != c.Horizon {
		t.Fatalf("%d inequalities and %d equalities, helpers say %d and %d", len(p.Ineq), len(p.Eq), c.NIneq(), c.Horizon)
	}
	check := func(got int, rows []gbd.Expr, want string) {
		t.Helper()
		if rows[got].Name != want {
			t.Errorf("row %d is %q, helper meant %q", got, rows[got].Name, want)
		}
	}
	for pp := range c.NP() {
		for tt := range c.Horizon {
			check(c.QMinRow(pp, tt), p.Ineq, fmt.Sprintf("qmin[%d,%d]", pp+1, tt))
			check(c.QMaxRow(pp, tt), p.Ineq, fmt.Sprintf("qmax[%d,%d]", pp+1, tt))
		}
		for b := range c.Blocks {
			check(c.StartRow(pp, b), p.Ineq, fmt.Sprintf("start[%d,%d]", pp+1, b+1))
		}
	}
	for tt := 1; tt <= c.Horizon; tt++ {
		check(c.HMinRow(tt), p.Ineq, fmt.Sprintf("hmin[%d]", tt))
		check(c.HMaxRow(tt), p.Ineq, fmt.Sprintf("hmax[%d]", tt))
		check(c.DynRow(tt-1), p.Eq, fmt.Sprintf("dyn[%d]", tt-1))
	}
}

// TestShiftDuals: the time-aligned multipliers of every row come from the old row of the same plant
// time (the last one past the old horizon), the start rows follow the block rule, and the second
// alignment is the multipliers as stored.
func TestShiftDuals(t *testing.T) {
	fam, c := specFamily(t)
	n, L, nb := c.Horizon, c.BlockLen(), c.Blocks
	// Every multiplier names its row: μ_i = i + 1, λ_t = −(t + 1).
	d := gbd.CutDuals{Mu: make([]float64, c.NIneq()), Lam: make([]float64, n)}
	for i := range d.Mu {
		d.Mu[i] = float64(i + 1)
	}
	for i := range d.Lam {
		d.Lam[i] = -float64(i + 1)
	}
	for _, k := range []int{0, 1, 3, 4, 5, 15, 40} {
		al := fam.ShiftDuals(d, k)
		if want := map[bool]int{true: 1, false: 2}[k == 0]; len(al) != want {
			t.Fatalf("k=%d: %d alignments, want %d", k, len(al), want)
		}
		s := al[0]
		st := func(tt int) int { return min(tt+k, n-1) }
		for tt := range n {
			if s.Lam[tt] != d.Lam[st(tt)] {
				t.Errorf("k=%d: λ of dyn[%d] = %g, want dyn[%d]'s", k, tt, s.Lam[tt], st(tt))
			}
			for pp := range c.NP() {
				if s.Mu[c.QMinRow(pp, tt)] != d.Mu[c.QMinRow(pp, st(tt))] || s.Mu[c.QMaxRow(pp, tt)] != d.Mu[c.QMaxRow(pp, st(tt))] {
					t.Errorf("k=%d: flow rows of pump %d step %d not taken from step %d", k, pp, tt, st(tt))
				}
			}
		}
		for tt := 1; tt <= n; tt++ {
			if src := min(tt+k, n); s.Mu[c.HMinRow(tt)] != d.Mu[c.HMinRow(src)] || s.Mu[c.HMaxRow(tt)] != d.Mu[c.HMaxRow(src)] {
				t.Errorf("k=%d: level rows of h[%d] not taken from h[%d]", k, tt, src)
			}
		}
		// The start rows move like the binaries (mpc.Blocking.ShiftPattern).
		pattern := make([]float64, c.NY())
		for i := range pattern {
			pattern[i] = float64(i)
		}
		moved := mpc.Blocking{Steps: n, Blocks: nb}.ShiftPattern(pattern, k)
		for pp := range c.NP() {
			for b := range nb {
				src := int(moved[c.YIndex(pp, b)]) - pp*nb
				if s.Mu[c.StartRow(pp, b)] != d.Mu[c.StartRow(pp, src)] {
					t.Errorf("k=%d: start[%d,%d] not taken from block %d (L=%d)", k, pp, b, src, L)
				}
			}
		}
		if k > 0 {
			for i := range d.Mu {
				if al[1].Mu[i] != d.Mu[i] {
					t.Fatalf("k=%d: the second alignment is not the multipliers as stored", k)
				}
			}
		}
	}
	if al := fam.ShiftDuals(gbd.CutDuals{Mu: d.Mu[1:], Lam: d.Lam}, 1); al != nil {
		t.Error("multipliers of another configuration were aligned")
	}
	if al := fam.ShiftDuals(d, -1); al != nil {
		t.Error("a negative shift was aligned")
	}
}

// nextInstance is the measurement one step after in when the plant followed the solve's plan with
// a disturbance: level off the plan by noise, pumps as planned for step 0, forecasts shifted by a
// step with the profile's next value appended (and scaled a little: forecasts get revised).
func nextInstance(rng *rand.Rand, c *Config, prof *Profile, in Instance, hour float64, r *gbd.Result) Instance {
	next := Instance{V: 1, PumpsOn: make([]int, c.NP())}
	next.Level = math.Min(math.Max(r.X[c.HIndex(1)]+0.05*rng.NormFloat64(), c.PhysMin), c.PhysMax)
	for p := range c.NP() {
		next.PumpsOn[p] = int(math.Round(r.Y[c.YIndex(p, 0)]))
	}
	d, pr := prof.Forecast(c, hour+c.Dt)
	scale := 1 + 0.05*rng.NormFloat64()
	next.Demand, next.Price = make([]float64, c.Horizon), make([]float64, c.Horizon)
	for t := range c.Horizon {
		next.Demand[t] = math.Min(math.Max(scale*d[t], 0), c.DemandMax)
		next.Price[t] = pr[t]
		if t+1 < c.Horizon {
			next.Demand[t] = math.Min(math.Max(scale*in.Demand[t+1], 0), c.DemandMax)
			next.Price[t] = in.Price[t+1]
		}
	}
	return next
}

// TestCarriedCutsValid is the validity argument on real consecutive steps: the multipliers of every
// cut of one step's GBD solve, of S(y) and F(y) at random assignments, and random multipliers (any
// μ ≥ 0 and λ), carried to the next step's problem with the family's alignments, give optimality
// cuts never above the next problem's Z(y) and feasibility cuts never positive at a feasible y,
// checked at random admissible y by solving S(y) directly.
func TestCarriedCutsValid(t *testing.T) {
	pairs := knob.Size(8, 3)
	checkCarriedCuts(t, pairs, func(rng *rand.Rand, c *Config, in *Instance, pair int) {
		if pair%2 == 1 {
			in.Level = 1.2 + 0.3*rng.Float64() // near the lower limit: more infeasible plans
		}
	}, Problem)
}

// TestCarriedSoftCutsValid is the same argument for the soft problem, between consecutive steps of
// a forecast the pumps cannot serve (the controller carries soft cuts only to soft problems).
func TestCarriedSoftCutsValid(t *testing.T) {
	pairs := knob.Size(4, 2)
	checkCarriedCuts(t, pairs, func(rng *rand.Rand, c *Config, in *Instance, pair int) {
		for tt := range in.Demand { // a shortfall of 20–80 m³/h over the two largest pumps
			in.Demand[tt] = math.Min(260+60*rng.Float64(), c.DemandMax)
		}
		if pair%2 == 1 {
			in.Level = 5.5 + 0.4*rng.Float64() // above the upper limit as well
		}
	}, func(c *Config, in *Instance) *gbd.Problem { p, _ := SoftProblem(c, in); return p })
}

// checkCarriedCuts runs the validity check on pairs of consecutive instances of the problem that
// build transcribes, each first instance sampled and then changed by adjust.
func checkCarriedCuts(t *testing.T, pairs int, adjust func(*rand.Rand, *Config, *Instance, int), build func(*Config, *Instance) *gbd.Problem) {
	ys := knob.Size(10, 8)
	fam, c := specFamily(t)
	prof := DefaultProfile()
	ypb := fam.Admissible()
	rng := rand.New(rand.NewPCG(77, 78))
	y := make([]float64, c.NY())
	checked, nFeas, nOpt, tight := 0, 0, 0, 0
	for pair := range pairs {
		hour := float64(rng.IntN(96)) * c.Dt
		in := SampleAt(rng, &c, &prof, hour)
		adjust(rng, &c, &in, pair)
		p1 := build(&c, &in)
		r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p1, ypb, gbd.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Y == nil {
			continue
		}
		pool := gbd.NewCutPool(0)
		pool.AddResult(0, r)
		sub1 := gbd.NewSubproblems(p1, nil, gbd.Settings{}.NLP)
		for range 6 {
			ypb.Float(rng.IntN(ypb.Count()), y)
			if res, err := sub1.Evaluate(y, 0); err == nil && res.Duals != nil {
				pool.Add(gbd.PooledCut{Kind: res.Cut.Kind, Duals: *res.Duals})
			}
		}
		for _, kind := range []gbd.CutKind{gbd.OptimalityCut, gbd.FeasibilityCut} {
			d := gbd.CutDuals{Mu: make([]float64, len(p1.Ineq)), Lam: make([]float64, len(p1.Eq))}
			for i := range d.Mu {
				d.Mu[i] = math.Max(0, rng.NormFloat64())
			}
			for i := range d.Lam {
				d.Lam[i] = 3 * rng.NormFloat64()
			}
			pool.Add(gbd.PooledCut{Kind: kind, Duals: d})
		}

		next := nextInstance(rng, &c, &prof, in, hour, r)
		p2 := build(&c, &next)
		cuts, st, err := pool.Carry(p2, 1, gbd.CarryOptions{Align: fam.ShiftDuals})
		if err != nil {
			t.Fatal(err)
		}
		if st.Carried == 0 || st.NoMinimum+st.NonFinite+st.NotSeparable+st.Misaligned > 0 {
			t.Errorf("pair %d: carry stats %+v (every pump-station cut should carry)", pair, st)
		}
		// The same multipliers carried with the start costs as hinges (gbd.CarryOptions.Hinges):
		// valid as well, and every optimality cut carries them.
		hcuts, _, err := pool.Carry(p2, 1, gbd.CarryOptions{Align: fam.ShiftDuals, Hinges: true, HingeStages: ypb.Stages})
		if err != nil {
			t.Fatal(err)
		}
		for _, cut := range hcuts {
			if (cut.Hinges != nil) != (cut.Kind == gbd.OptimalityCut) {
				t.Errorf("pair %d: a carried %v cut with hinges %v", pair, cut.Kind, cut.Hinges != nil)
			}
		}
		cuts = append(cuts, hcuts...)
		sub2 := gbd.NewSubproblems(p2, nil, gbd.Settings{}.NLP)
		cand := [][]float64{r.Y, mpc.Blocking{Steps: c.Horizon, Blocks: c.Blocks}.ShiftPattern(r.Y, 1)}
		for range ys {
			cand = append(cand, ypb.Float(rng.IntN(ypb.Count()), make([]float64, c.NY())))
		}
		for _, yy := range cand {
			res, err := sub2.Evaluate(yy, 0)
			if err != nil {
				t.Fatalf("pair %d: S(y) at %v: %v", pair, yy, err)
			}
			if !res.Feasible {
				continue
			}
			checked++
			for _, cut := range cuts {
				v := cut.Eval(yy)
				switch cut.Kind {
				case gbd.OptimalityCut:
					nOpt++
					if v > res.Z+1e-7*(1+math.Abs(res.Z)) {
						t.Errorf("pair %d: carried optimality cut %.9g above Z(y) = %.9g at y=%v", pair, v, res.Z, yy)
					}
					if v > res.Z-1e-3 {
						tight++
					}
				case gbd.FeasibilityCut:
					nFeas++
					if v > 1e-6 {
						t.Errorf("pair %d: carried feasibility cut %.3g > 0 cuts off the feasible y=%v", pair, v, yy)
					}
				}
			}
		}
	}
	if checked == 0 || nFeas == 0 {
		t.Fatalf("checked %d feasible assignments against %d feasibility cut values: too few", checked, nFeas)
	}
	t.Logf("%d feasible assignments: %d optimality cut values (%d within 1e-3 of Z), %d feasibility cut values, all valid",
		checked, nOpt, tight, nFeas)
}

// TestResultDualsReproduceCuts: the engine's multipliers, re-evaluated on the problem they came
// from, give each cut back as a certified lower bound: never above Z at the cut's own y, and
// close to it (the engine's cut is the Lagrangian at the NLP's x*, exact only up to solver
// tolerances).
func TestResultDualsReproduceCuts(t *testing.T) {
	c := DefaultConfig()
	ypb, err := Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	in := SampleAt(rand.New(rand.NewPCG(5, 5)), &c, ptr(DefaultProfile()), 17)
	p := Problem(&c, &in)
	carried := gbd.Cut{Kind: gbd.OptimalityCut, Coef: make([]float64, c.NY()), Const: -1e3}
	r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, ypb, gbd.Settings{Cuts: []gbd.Cut{carried}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Duals) != len(r.Cuts) {
		t.Fatalf("%d duals for %d cuts", len(r.Duals), len(r.Cuts))
	}
	if r.Duals[0] != nil || !r.Cuts[0].Carried || r.Cuts[0].Iter != -1 {
		t.Errorf("carried cut: duals %v, cut %+v", r.Duals[0], r.Cuts[0])
	}
	lag, err := gbd.NewLagrangian(p)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, cut := range r.Cuts[1:] {
		it := r.Trace[cut.Iter]
		d := r.Duals[i+1]
		if it.NoGood != (d == nil) {
			t.Errorf("iteration %d: no-good %v but duals %v", cut.Iter, it.NoGood, d != nil)
		}
		if d == nil {
			continue
		}
		q, err := lag.Cut(cut.Kind, *d)
		if err != nil {
			t.Fatalf("iteration %d: %v", cut.Iter, err)
		}
		own := cut.Eval(it.Y)
		if cut.Kind == gbd.OptimalityCut && q.Eval(it.Y) > it.Z+1e-7*(1+math.Abs(it.Z)) {
			t.Errorf("iteration %d: re-evaluated cut %.9g above Z = %.9g", cut.Iter, q.Eval(it.Y), it.Z)
		}
		worst = math.Max(worst, own-q.Eval(it.Y))
		if own-q.Eval(it.Y) > 1e-7*(1+math.Abs(own)) || q.Eval(it.Y) > own+1e-7*(1+math.Abs(own)) {
			t.Errorf("iteration %d (%v): re-evaluated %.9g, engine's cut %.9g at its own y", cut.Iter, cut.Kind, q.Eval(it.Y), own)
		}
	}
	t.Logf("%d cuts: the re-evaluated cut is at most %.3g below the engine's at its own y", len(r.Cuts)-1, worst)
}

// BenchmarkCarry re-evaluates a full pool (gbd.DefaultPoolSize cuts, two alignments each) for the
// next step's problem: the time a control step spends before its solve starts.
func BenchmarkCarry(b *testing.B) {
	fam, c := specFamily(b)
	prof := DefaultProfile()
	rng := rand.New(rand.NewPCG(3, 3))
	in := SampleAt(rng, &c, &prof, 7)
	p1 := Problem(&c, &in)
	sub := gbd.NewSubproblems(p1, nil, gbd.Settings{}.NLP)
	pool := gbd.NewCutPool(0)
	ypb := fam.Admissible()
	y := make([]float64, c.NY())
	for step := 0; pool.Len() < pool.Max(); step++ {
		ypb.Float(rng.IntN(ypb.Count()), y)
		if res, err := sub.Evaluate(y, 0); err == nil && res.Duals != nil {
			pool.Add(gbd.PooledCut{Kind: res.Cut.Kind, Duals: *res.Duals, Step: step / 25})
		}
	}
	p2 := Problem(&c, &in)
	b.ResetTimer()
	for range b.N {
		if _, _, err := pool.Carry(p2, 11, gbd.CarryOptions{Align: fam.ShiftDuals}); err != nil {
			b.Fatal(err)
		}
	}
}

// refusingMaster is an enum master that takes no hinges (as a master would whose structure the
// hinges do not fit).
type refusingMaster struct{ enum.Master }

func (m *refusingMaster) TakeHinges(*gbd.Hinges) bool { return false }

// TestCarriedCutsCarryHingesAsTheSolvesDo: in closed loop the carried optimality cuts carry the
// start costs' hinges when the master took them in the last solve, and not when it refused them
// (made with the hinge rows' multipliers at 0, they would only be weaker cuts for it).
func TestCarriedCutsCarryHingesAsTheSolvesDo(t *testing.T) {
	fam, c := specFamily(t)
	prof := DefaultProfile()
	for _, refuse := range []bool{false, true} {
		ctrl, err := mpc.NewController(fam, mpc.Options{NewMaster: func() gbd.Master {
			if refuse {
				return &refusingMaster{}
			}
			return &enum.Master{}
		}})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(4, 4))
		carried, hinged := 0, 0
		for step := range 4 {
			in := SampleAt(rng, &c, &prof, float64(step)*c.Dt)
			b, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			m, err := fam.DecodeMeasurement(b)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ctrl.Step(m, time.Now().Add(time.Minute))
			if err != nil || d.Result == nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if (d.Result.Hinges != nil) == refuse {
				t.Fatalf("step %d (refusing %v): the solve's hinges %v", step, refuse, d.Result.Hinges != nil)
			}
			for _, cut := range d.Result.Cuts {
				if cut.Carried && cut.Kind == gbd.OptimalityCut {
					carried++
					if cut.Hinges != nil {
						hinged++
					}
				}
			}
		}
		if carried == 0 || (refuse && hinged != 0) || (!refuse && hinged != carried) {
			t.Errorf("refusing %v: %d of %d carried optimality cuts with hinges", refuse, hinged, carried)
		}
	}
}
