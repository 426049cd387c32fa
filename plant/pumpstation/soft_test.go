package pumpstation

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/internal/knob"
	"gbdmpc/mpc"
)

// constant is an instance with the same demand and price at every step.
func constant(c *Config, level, demand float64, on []int) Instance {
	in := Instance{V: 1, Level: level, PumpsOn: on, Demand: make([]float64, c.Horizon), Price: make([]float64, c.Horizon)}
	for t := range c.Horizon {
		in.Demand[t], in.Price[t] = demand, 0.2
	}
	return in
}

// shortfall is the instance: level 3 m, 300 m³/h for the whole horizon, where the two
// largest pumps give 240 m³/h.
func shortfall(c *Config) Instance { return constant(c, 3, 300, make([]int, c.NP())) }

// blockTrap is an instance the reachability pre-check cannot settle: at 4.99 m with no demand in
// step 0 any running pump overfills the tank, so the first block must run none, and the 300 m³/h
// of steps 1–3 then empty it below 1 m. Only the move blocking (a pump runs a whole block) makes it
// infeasible, which Reach ignores.
func blockTrap(c *Config) Instance {
	in := constant(c, 4.99, 100, make([]int, c.NP()))
	in.Demand[0] = 0
	for t := 1; t < c.BlockLen(); t++ {
		in.Demand[t] = 300
	}
	return in
}

// TestSoftTranscription: the soft problem has the hard problem's binaries, pure rows and rows (same
// names, same order, so the row helpers and ShiftDuals apply to both), its extra variables sit after
// the hard layout with the documented boxes, and at a point with no violation and no unserved
// demand every row and the objective equal the hard problem's. With violations, the level rows and
// dynamics move by exactly the violation and the unserved inflow, and the objective by the penalties.
func TestSoftTranscription(t *testing.T) {
	for _, c := range []Config{smallConfig(), DefaultConfig()} {
		t.Run(fmt.Sprintf("N=%d,B=%d", c.Horizon, c.Blocks), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, 4))
			in := SampleAt(rng, &c, ptr(DefaultProfile()), 8)
			hard := Problem(&c, &in)
			soft, pen := SoftProblem(&c, &in)
			if err := soft.Validate(); err != nil {
				t.Fatal(err)
			}
			if soft.NX != c.SoftNX() || soft.NX != hard.NX+3*c.Horizon || soft.NY != hard.NY {
				t.Fatalf("soft NX=%d NY=%d, hard NX=%d NY=%d", soft.NX, soft.NY, hard.NX, hard.NY)
			}
			if fmt.Sprint(soft.Pure) != fmt.Sprint(hard.Pure) || len(soft.Ineq) != len(hard.Ineq) || len(soft.Eq) != len(hard.Eq) {
				t.Fatal("soft problem has other pure rows or another number of rows")
			}
			for i := range hard.Ineq {
				if soft.Ineq[i].Name != hard.Ineq[i].Name {
					t.Errorf("inequality %d: soft %q, hard %q", i, soft.Ineq[i].Name, hard.Ineq[i].Name)
				}
			}
			for i := range hard.NX {
				if soft.XNames[i] != hard.XNames[i] || soft.XLo[i] != hard.XLo[i] || soft.XHi[i] != hard.XHi[i] {
					t.Errorf("variable %d: soft %s [%g, %g], hard %s [%g, %g]", i, soft.XNames[i], soft.XLo[i], soft.XHi[i],
						hard.XNames[i], hard.XLo[i], hard.XHi[i])
				}
			}
			k := c.Dt / c.Area
			for tt := 1; tt <= c.Horizon; tt++ {
				if b, a, u := c.BelowIndex(tt), c.AboveIndex(tt), c.UIndex(tt-1); soft.XLo[b] != 0 || soft.XLo[a] != 0 || soft.XLo[u] != 0 ||
					!near(soft.XHi[b], pen.Level*(c.LevelMin-c.PhysMin), 1e-12) || !near(soft.XHi[a], pen.Level*(c.PhysMax-c.LevelMax), 1e-12) ||
					!near(soft.XHi[u], pen.Unserved[tt-1]*k*in.Demand[tt-1], 1e-12) {
					t.Errorf("step %d: soft boxes %s [%g,%g] %s [%g,%g] %s [%g,%g]", tt, soft.XNames[b], soft.XLo[b], soft.XHi[b],
						soft.XNames[a], soft.XLo[a], soft.XHi[a], soft.XNames[u], soft.XLo[u], soft.XHi[u])
				}
			}
			// Penalties: positive, the unserved one above the level one and decreasing with the step.
			if !(pen.Bound > 0 && pen.Level > pen.Bound) || pen.Unserved[c.Horizon-1] <= pen.Level {
				t.Errorf("penalties %+v", pen)
			}
			for tt := 1; tt < c.Horizon; tt++ {
				if pen.Unserved[tt-1]-pen.Unserved[tt] <= pen.Level {
					t.Errorf("σ_%d − σ_%d = %g, not above ρ = %g", tt-1, tt, pen.Unserved[tt-1]-pen.Unserved[tt], pen.Level)
				}
			}

			x := make([]float64, soft.NX)
			y := make([]float64, soft.NY)
			for i := range hard.NX {
				x[i] = hard.XLo[i] + rng.Float64()*(hard.XHi[i]-hard.XLo[i])
			}
			for i := range y {
				y[i] = float64(rng.IntN(2))
			}
			eval := func(p *gbd.Problem, x []float64) (obj float64, ineq, eq []float64) {
				obj, _ = p.Objective.Eval(x, y)
				for _, e := range p.Ineq {
					v, _ := e.Eval(x, y)
					ineq = append(ineq, v)
				}
				for _, e := range p.Eq {
					v, _ := e.Eval(x, y)
					eq = append(eq, v)
				}
				return
			}
			ho, hi, he := eval(hard, x[:hard.NX])
			so, si, se := eval(soft, x)
			if !near(so, ho, 1e-12) || !slices.Equal(hi, si) || !slices.Equal(he, se) {
				t.Fatalf("without violations the soft problem differs: objective %v vs %v", so, ho)
			}
			// Violations of 0.1 m below and 0.2 m above at every step, 7 m³/h unserved at every step.
			for tt := 1; tt <= c.Horizon; tt++ {
				x[c.BelowIndex(tt)] = 0.1 * pen.Level
				x[c.AboveIndex(tt)] = 0.2 * pen.Level
				x[c.UIndex(tt-1)] = 7 * pen.Unserved[tt-1] * k
			}
			so, si, se = eval(soft, x)
			wantObj := ho
			for tt := 1; tt <= c.Horizon; tt++ {
				wantObj += 0.3*pen.Level + 7*k*pen.Unserved[tt-1]
				if !near(si[c.HMinRow(tt)], hi[c.HMinRow(tt)]-0.1, 1e-9) || !near(si[c.HMaxRow(tt)], hi[c.HMaxRow(tt)]-0.2, 1e-9) {
					t.Errorf("level rows of step %d: %v, %v from %v, %v", tt, si[c.HMinRow(tt)], si[c.HMaxRow(tt)], hi[c.HMinRow(tt)], hi[c.HMaxRow(tt)])
				}
				if !near(se[c.DynRow(tt-1)], he[c.DynRow(tt-1)]-7*k, 1e-9) {
					t.Errorf("dyn[%d] = %v, want %v", tt-1, se[c.DynRow(tt-1)], he[c.DynRow(tt-1)]-7*k)
				}
			}
			if !near(so, wantObj, 1e-12) {
				t.Errorf("objective with violations %v, want %v", so, wantObj)
			}
		})
	}
}

// TestReachIsACertificate: whenever the pre-check says the limits cannot be held, the hard MINLP
// is infeasible (GBD's exact verdict), and it stays inconclusive on servable instances.
func TestReachIsACertificate(t *testing.T) {
	c := DefaultConfig()
	ypb, err := Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	high := constant(&c, 4.9, 30, []int{0, 0, 1})
	high.Demand[0] = 0 // nothing drawn while the level is already near the top
	cases := []struct {
		name  string
		in    Instance
		limit string // "" inconclusive
	}{
		{"shortfall", shortfall(&c), "level_min_m"},
		{"just servable", constant(&c, 3, 240, []int{0, 1, 1}), ""},
		{"empty tank", constant(&c, 0, 120, []int{0, 0, 0}), "level_min_m"},
		{"overfull tank, no demand", constant(&c, 5.5, 0, []int{0, 0, 0}), "level_max_m"},
		{"overfull tank drains in a step", constant(&c, 5.5, 120, []int{0, 0, 0}), ""},
		{"near the top", high, ""},
		{"block trap", blockTrap(&c), ""},
	}
	for _, tc := range cases {
		limit, step, ok := Reach(&c, &tc.in)
		if limit != tc.limit || ok != (tc.limit == "") {
			t.Errorf("%s: Reach = %q at step %d (ok %v), want %q", tc.name, limit, step, ok, tc.limit)
		}
		r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(Problem(&c, &tc.in), ypb, gbd.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if !ok && r.Status != gbd.StatusInfeasible {
			t.Errorf("%s: the pre-check claims infeasibility at step %d, GBD ended %s", tc.name, step, r.Status)
		}
		t.Logf("%s: Reach %q step %d; hard GBD %s in %d iterations", tc.name, limit, step, r.Status, r.Iterations)
		if tc.name == "block trap" && r.Status != gbd.StatusInfeasible {
			t.Errorf("block trap: GBD ended %s, want infeasible", r.Status)
		}
	}
}

// servable draws an instance that some plan holds within the limits, by construction: a random
// admissible pump pattern with random flows in each pump's range and a random level path inside
// [LevelMin + 0.2, LevelMax − 0.2], with the demand that makes that plan follow the path.
func servable(rng *rand.Rand, c *Config, ypb *gbd.Admissible) Instance {
	k := c.Dt / c.Area
	for {
		y := ypb.Float(rng.IntN(ypb.Count()), make([]float64, c.NY()))
		in := Instance{V: 1, Level: c.LevelMin + 0.2 + rng.Float64()*(c.LevelMax-c.LevelMin-0.4),
			PumpsOn: make([]int, c.NP()), Demand: make([]float64, c.Horizon), Price: make([]float64, c.Horizon)}
		for p := range c.NP() {
			in.PumpsOn[p] = int(y[c.YIndex(p, 0)])
		}
		h, ok := in.Level, true
		for t := range c.Horizon {
			inflow := 0.0
			for p, pump := range c.Pumps {
				if y[c.YIndex(p, c.BlockOf(t))] == 1 {
					inflow += pump.QMin + rng.Float64()*(pump.QMax-pump.QMin)
				}
			}
			next := h + 0.3*rng.NormFloat64()
			if next > h+k*inflow { // more than the pumps can lift: a demand between 0 and the inflow
				next = h + k*inflow*rng.Float64()
			}
			next = math.Min(math.Max(next, c.LevelMin+0.2), c.LevelMax-0.2)
			in.Demand[t] = inflow - (next-h)/k
			in.Price[t] = []float64{0.12, 0.35}[rng.IntN(2)]
			ok = ok && in.Demand[t] >= 0 && in.Demand[t] <= c.DemandMax
			h = next
		}
		if ok {
			return in
		}
	}
}

// anyForecast draws an instance with no care for whether it can be served: a level anywhere in the
// tank and a demand that wanders between none and well beyond the pumps.
func anyForecast(rng *rand.Rand, c *Config) Instance {
	in := Instance{V: 1, Level: c.PhysMin + rng.Float64()*(c.PhysMax-c.PhysMin), PumpsOn: make([]int, c.NP()),
		Demand: make([]float64, c.Horizon), Price: make([]float64, c.Horizon)}
	d := 400 * rng.Float64()
	for t := range c.Horizon {
		d = math.Min(math.Max(d+60*rng.NormFloat64(), 0), 400)
		in.Demand[t], in.Price[t] = d, 0.05+0.3*rng.Float64()
	}
	return in
}

// TestPlansArePhysical is the property test of the issue: over seeded random forecasts, servable
// or not, the controller always publishes a plan (never a fallback without a deadline), no plan
// holds a level below the tank's floor or above its overflow height, demand goes unserved only
// while the tank is empty, every instance that some plan serves is never relaxed, and a relaxed
// plan's report matches its levels.
func TestPlansArePhysical(t *testing.T) {
	n := knob.Size(6, 3)
	fam, c := specFamily(t)
	rng := rand.New(rand.NewPCG(31, 41))
	relaxed := 0
	for i := range 2 * n {
		var in Instance
		if i%2 == 0 {
			in = servable(rng, &c, fam.Admissible())
		} else {
			in = anyForecast(rng, &c)
		}
		_, d, err := stepFresh(t, fam, in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == mpc.StatusFallback {
			t.Fatalf("instance %d (level %.2f): fallback without a deadline: %s", i, in.Level, d.Reason)
		}
		if i%2 == 0 && d.Relaxed != nil {
			t.Errorf("instance %d is servable by construction, yet relaxed: %+v", i, d.Relaxed)
		}
		x := d.Result.X
		pen := SoftPenalties(&c, &in)
		for tt := 1; tt <= c.Horizon; tt++ {
			h := x[c.HIndex(tt)]
			if h < c.PhysMin-1e-7 || h > c.PhysMax+1e-7 {
				t.Errorf("instance %d: planned level %v at step %d outside the tank [%v, %v]", i, h, tt-1, c.PhysMin, c.PhysMax)
			}
			if d.Kind == mpc.Soft {
				if u := x[c.UIndex(tt-1)] / (pen.Unserved[tt-1] * c.Dt / c.Area); u > 1e-3 && h > c.PhysMin+1e-4 {
					t.Errorf("instance %d: %v m³/h unserved in step %d while the tank holds %v m", i, u, tt-1, h)
				}
			}
		}
		if d.Relaxed == nil {
			if d.Kind == mpc.Soft {
				t.Logf("instance %d: the soft problem found the plan within the limits", i)
			}
			continue
		}
		relaxed++
		r := d.Relaxed
		var pl planJSON
		if err := json.Unmarshal(d.Plan, &pl); err != nil {
			t.Fatal(err)
		}
		worst, unserved := 0.0, 0.0
		for _, s := range pl.Steps {
			worst = math.Max(worst, math.Max(c.LevelMin-s.Level, s.Level-c.LevelMax))
			unserved += s.Unserved * c.Dt
		}
		if math.Abs(worst-r.MaxViolation) > 1e-6 || r.Proof == "" || r.FirstStep < 0 || r.FirstStep > r.WorstStep {
			t.Errorf("instance %d: relaxation %+v, plan's worst violation %v", i, r, worst)
		}
		if math.Abs(unserved-r.Unserved) > 1e-6*(1+r.Unserved) {
			t.Errorf("instance %d: the plan leaves %v m³ unserved, the relaxation says %v", i, unserved, r.Unserved)
		}
		// A relaxed plan reads back as published (a standby adopts it on taking over).
		back, err := fam.DecodePlan(d.Plan)
		if err != nil || string(back.JSON()) != string(d.Plan) {
			t.Errorf("instance %d: relaxed plan does not read back: %v", i, err)
		}
	}
	if relaxed == 0 {
		t.Error("no random forecast was relaxed: the property was not exercised")
	}
	t.Logf("%d instances, %d relaxed", 2*n, relaxed)
}

// atTheLimit is servable only by filling the tank to 4.5 m before an 8-step deficit of 3.5 m that
// ends at the lower limit: the hard optimum holds a level row active, with a positive multiplier.
func atTheLimit(c *Config) Instance {
	in := constant(c, 3, 60, []int{0, 1, 1})
	k := c.Dt / c.Area
	for t := c.Horizon / 2; t < c.Horizon; t++ {
		in.Demand[t] = 240 + 3.5/(k*float64(c.Horizon/2))
	}
	return in
}

// TestSoftEqualsHard: on servable instances the soft problem's optimum is the hard one's (same
// assignment, same cost within GBD's ε), and at the hard optimum every level-row multiplier is far
// below the penalty ρ, the per-assignment exactness condition of the L1 penalty (doc.go).
func TestSoftEqualsHard(t *testing.T) {
	n := knob.Size(4, 2)
	active := 0.0
	c := DefaultConfig()
	ypb, err := Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(59, 26))
	set := gbd.Settings{Eps: 1e-6}
	for i := range n {
		in := servable(rng, &c, ypb)
		switch i {
		case 0:
			in = atTheLimit(&c)
		case 1:
			in = SampleAt(rng, &c, ptr(DefaultProfile()), 18) // the evening peak
		}
		rh, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(Problem(&c, &in), ypb, set)
		if err != nil || rh.Status != gbd.StatusOptimal {
			t.Fatalf("instance %d: hard solve %v %v", i, err, rh.Status)
		}
		sp, pen := SoftProblem(&c, &in)
		rs, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(sp, ypb, set)
		if err != nil || rs.Status != gbd.StatusOptimal {
			t.Fatalf("instance %d: soft solve %v %v", i, err, rs.Status)
		}
		if _, violated := relaxation(&c, &in, rs.X); violated {
			t.Errorf("instance %d: the soft optimum breaks the limits", i)
		}
		if math.Abs(rs.Objective-rh.Objective) > 1e-5*(1+math.Abs(rh.Objective)) || ypb.Index(rs.Y) != ypb.Index(rh.Y) {
			t.Errorf("instance %d: soft optimum %.9g at %v, hard %.9g at %v", i, rs.Objective, rs.Y, rh.Objective, rh.Y)
		}
		res, err := gbd.NewSubproblems(Problem(&c, &in), nil, set.NLP).Evaluate(rh.Y, 0)
		if err != nil || !res.Feasible || res.Duals == nil {
			t.Fatalf("instance %d: S(y*) %v", i, err)
		}
		mu := 0.0
		for tt := 1; tt <= c.Horizon; tt++ {
			mu = math.Max(mu, math.Max(res.Duals.Mu[c.HMinRow(tt)], res.Duals.Mu[c.HMaxRow(tt)]))
		}
		if mu >= pen.Level/100 {
			t.Errorf("instance %d: level multiplier %g within a factor 100 of ρ = %g", i, mu, pen.Level)
		}
		if i == 0 {
			active = mu
		}
		t.Logf("instance %d: %.6f (hard) = %.6f (soft); largest level multiplier %.3g, ρ = %.3g", i, rh.Objective, rs.Objective, mu, pen.Level)
	}
	if active < 1e-3 {
		t.Errorf("the instance at the limit has level multipliers of at most %g: no active limit was tested", active)
	}
}

// TestSoftGBDInvariants: on unservable instances of an 8-step, 2-block horizon (small enough to
// enumerate quickly), GBD on the soft problem finds the enumeration's optimum with both master
// back-ends, keeps LBD ≤ UBD and monotone, and makes only valid cuts: every optimality cut stays
// below Z(y) and every feasibility cut excludes no feasible y, at every assignment the solve
// evaluated.
func TestSoftGBDInvariants(t *testing.T) {
	c := DefaultConfig()
	c.Horizon, c.Blocks = 8, 2
	ypb, err := Admissible(&c)
	if err != nil {
		t.Fatal(err)
	}
	// The last one is nearly full with no demand: the plans that run two pumps overflow the tank,
	// so the soft problem has infeasible assignments and feasibility cuts too.
	cases := []Instance{shortfall(&c), blockTrap(&c), constant(&c, 0.3, 150, []int{1, 0, 0}), constant(&c, 5.9, 0, []int{0, 0, 0})}
	if testing.Short() {
		cases = []Instance{cases[0], cases[3]}
	}
	feasCuts := 0
	for _, in := range cases {
		sp, _ := SoftProblem(&c, &in)
		gt, err := gbd.SolveByEnumeration(sp, ypb, nil, gbd.Settings{})
		if err != nil || !gt.Feasible {
			t.Fatalf("enumeration: %v, feasible %v", err, gt.Feasible)
		}
		for _, m := range masters {
			agreeWithGroundTruth(t, sp, ypb, gt, m.new)
		}
		// Started from the two large pumps throughout, which overfill the nearly full tank.
		y0 := make([]float64, c.NY())
		for b := range c.Blocks {
			y0[c.YIndex(1, b)], y0[c.YIndex(2, b)] = 1, 1
		}
		r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(sp, ypb, gbd.Settings{Eps: 1e-7, Y0: y0})
		if err != nil {
			t.Fatal(err)
		}
		if _, violated := relaxation(&c, &in, r.X); !violated {
			t.Errorf("unservable instance at level %v: the soft optimum holds the limits", in.Level)
		}
		for _, cut := range r.Cuts {
			if cut.Kind == gbd.FeasibilityCut {
				feasCuts++
			}
		}
		for _, it := range r.Trace {
			for _, cut := range r.Cuts {
				v := cut.Eval(it.Y)
				switch {
				case !it.Feasible:
				case cut.Kind == gbd.OptimalityCut && v > it.Z+1e-6*(1+math.Abs(it.Z)):
					t.Errorf("optimality cut of iteration %d is %v at y^%d, above Z = %v", cut.Iter, v, it.K, it.Z)
				case cut.Kind == gbd.FeasibilityCut && v > 1e-6:
					t.Errorf("feasibility cut of iteration %d excludes the feasible y^%d (%v)", cut.Iter, it.K, v)
				}
			}
		}
	}
	if feasCuts == 0 {
		t.Error("no feasibility cut was made: the soft problem's infeasible assignments were not exercised")
	}
}

// TestSoftNLPDerivatives checks the compiled soft S(y) and F(y) against finite differences (the
// soft rows are linear, but they are new rows and columns of the compiled NLP).
func TestSoftNLPDerivatives(t *testing.T) {
	c := DefaultConfig()
	in := shortfall(&c)
	in.Level = 5.9 // above the limit too, so the upper violations are in play
	p, _ := SoftProblem(&c, &in)
	dc := &derivChecker{t: t, rng: rand.New(rand.NewPCG(13, 14)), span: 1}
	sub := gbd.NewSubproblems(p, dc, gbd.Settings{}.NLP)
	all := make([]float64, c.NY())
	for b := range c.Blocks {
		all[c.YIndex(0, b)], all[c.YIndex(2, b)] = 1, 1
	}
	for _, y := range [][]float64{make([]float64, c.NY()), all} {
		if _, err := sub.Evaluate(y, 0); err != nil {
			t.Fatal(err)
		}
	}
	if dc.checked < 2 {
		t.Errorf("checked %d NLPs", dc.checked)
	}
}
