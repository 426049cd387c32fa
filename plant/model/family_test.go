package model

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// The pump-station model writes its rows in the built-in family's order, so its carried cuts
// shift exactly as the built-in ones do.
func TestShiftDualsMatchesBuiltin(t *testing.T) {
	fam := loadPumpStation(t)
	ps, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	in := groundTruthInstances()[0]
	mm, err := fam.DecodeMeasurement(asModelMeasurement(in))
	if err != nil {
		t.Fatal(err)
	}
	mp, _ := mm.Problem()
	rng := rand.New(rand.NewPCG(3, 7))
	d := gbd.CutDuals{Mu: make([]float64, len(mp.Ineq)), Lam: make([]float64, len(mp.Eq))}
	for i := range d.Mu {
		d.Mu[i] = rng.Float64()
	}
	for i := range d.Lam {
		d.Lam[i] = rng.NormFloat64()
	}
	for _, k := range []int{0, 1, 3, 4, 5, 15, 40} {
		got, want := fam.ShiftDuals(d, k), ps.ShiftDuals(d, k)
		if len(got) != len(want) || want == nil {
			t.Fatalf("k=%d: %d alignments, builtin %d", k, len(got), len(want))
		}
		for a := range got {
			if !slices.Equal(got[a].Mu, want[a].Mu) || !slices.Equal(got[a].Lam, want[a].Lam) {
				t.Errorf("k=%d, alignment %d differs from the builtin's", k, a)
			}
		}
	}
	if fam.ShiftDuals(gbd.CutDuals{Mu: d.Mu[1:], Lam: d.Lam}, 1) != nil {
		t.Error("duals of another layout were shifted")
	}
}

// TestClosedLoopCarriedCuts runs the controller on the pump-station model for a few periods, the
// plant following the plan's predicted level with seeded noise: every step's decision has the
// from-scratch optimum (carried cuts change the speed, never the answer), cuts are carried, and
// the action names every input and unit.
func TestClosedLoopCarriedCuts(t *testing.T) {
	if testing.Short() {
		t.Skip("closed loop")
	}
	fam := loadPumpStation(t)
	set := gbd.Settings{Eps: 1e-7}
	ctrl, err := mpc.NewController(fam, mpc.Options{Settings: set})
	if err != nil {
		t.Fatal(err)
	}
	c, prof := pumpstation.DefaultConfig(), pumpstation.DefaultProfile()
	rng := rand.New(rand.NewPCG(37, 6))
	in := pumpstation.SampleAt(rng, &c, &prof, 6)
	carried := 0
	for k := range 6 {
		m, err := fam.DecodeMeasurement(asModelMeasurement(in))
		if err != nil {
			t.Fatal(err)
		}
		d, err := ctrl.Step(m, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == mpc.StatusFallback {
			t.Fatalf("step %d: fallback (%s)", k, d.Reason)
		}
		carried += d.Carry.Carried
		p, _ := m.Problem()
		r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, fam.Admissible(), set)
		if err != nil || r.Y == nil {
			t.Fatalf("step %d: from scratch %v, %v", k, r.Status, err)
		}
		if math.Abs(d.Objective-r.Objective) > 1e-6*math.Abs(r.Objective) {
			t.Errorf("step %d: objective %.10g with carried cuts, %.10g from scratch", k, d.Objective, r.Objective)
		}
		inputs, on, err := fam.DecodeApply(d.Apply)
		if err != nil {
			t.Fatalf("step %d: the action does not read back: %v (%s)", k, err, d.Apply)
		}
		var plan struct {
			States map[string][]float64 `json:"states"`
		}
		if err := json.Unmarshal(d.Plan, &plan); err != nil || len(plan.States["level_m"]) != c.Horizon {
			t.Fatalf("step %d: plan %s: %v", k, d.Plan, err)
		}
		// The plant: the model's dynamics with the first step's actual demand off by noise.
		flow := inputs[0] + inputs[1] + inputs[2]
		dem := in.Demand[0] + 5*rng.NormFloat64()
		in.Level = math.Min(math.Max(in.Level+0.005*(flow-dem), 0), 6)
		for p := range in.PumpsOn {
			in.PumpsOn[p] = on[p]
		}
		in.Demand = append(in.Demand[1:], in.Demand[len(in.Demand)-1])
		in.Price = append(in.Price[1:], in.Price[len(in.Price)-1])
	}
	if carried == 0 {
		t.Error("no cut was carried between steps")
	}
}

// The safe action holds every input and unit by name and is one the plant accepts; a configured
// one replaces it only when the plant would accept it.
func TestSafeAction(t *testing.T) {
	fam := loadPumpStation(t)
	if _, _, err := fam.DecodeApply(fam.SafeAction()); err != nil {
		t.Fatalf("%s: %v", fam.SafeAction(), err)
	}
	g, err := fam.WithSafeAction([]byte(`{"q1":0,"q2":45,"q3":0,"p1":0,"p2":1,"p3":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(g.SafeAction()) != `{"q1":0,"q2":45,"q3":0,"p1":0,"p2":1,"p3":0}` {
		t.Errorf("safe action %s", g.SafeAction())
	}
	for _, bad := range []string{
		`{"q1":0,"q2":10,"q3":0,"p1":0,"p2":1,"p3":0}`,   // below q_min while on
		`{"q1":5,"q2":45,"q3":0,"p1":0,"p2":1,"p3":0}`,   // flow while off
		`{"q1":0,"q2":45,"q3":0,"p1":0,"p2":1}`,          // a unit missing
		`{"q1":0,"q2":45,"q3":0,"p1":0,"p2":1,"p3":0.5}`, // half on
		`{"q1":0,"q1":0,"q3":0,"p1":0,"p2":0,"p3":0}`,    // twice
	} {
		if _, err := fam.WithSafeAction([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// The pump-station model proposes the built-in family's alternates: its binaries are laid out
// alike (unit-major, y[p,b] at p·B + b).
func TestAlternatesMatchBuiltin(t *testing.T) {
	fam := loadPumpStation(t)
	ps, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	in := groundTruthInstances()[1]
	mm, err := fam.DecodeMeasurement(asModelMeasurement(in))
	if err != nil {
		t.Fatal(err)
	}
	pm, err := ps.Measure(in)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	y := make([]float64, 12)
	for range 50 {
		for i := range y {
			y[i] = float64(rng.IntN(2))
		}
		got, want := mm.(*Measurement).Alternates(y), pm.Alternates(y)
		if len(got) != len(want) {
			t.Fatalf("y=%v: %d alternates, builtin %d", y, len(got), len(want))
		}
		for k := range got {
			if !slices.Equal(got[k], want[k]) {
				t.Errorf("y=%v: alternate %d is %v, builtin %v", y, k, got[k], want[k])
			}
		}
	}
	if mm.(*Measurement).Alternates(y[1:]) != nil {
		t.Error("alternates of a wrong-sized y")
	}
}

// Alternates hand blocks only between substitutes: in the microgrid the genset and the
// discharging battery (both feed the balance), never charging and discharging.
func TestAlternatesSubstitutes(t *testing.T) {
	fam, err := Load(microgridFile)
	if err != nil {
		t.Fatal(err)
	}
	s := fam.l.subst
	ch, dis, gen := fam.l.unitIdx["charging"], fam.l.unitIdx["discharging"], fam.l.unitIdx["genset"]
	if !s[dis][gen] || !s[gen][dis] || s[ch][dis] || s[ch][gen] {
		t.Errorf("substitutes %v", s)
	}
	y := make([]float64, fam.l.ny)
	y[fam.l.yIndex(gen, 1)], y[fam.l.yIndex(gen, 2)] = 1, 1
	mm := &Measurement{Inst: fam.m.Sample(seeded()), fam: fam}
	got := mm.Alternates(y)
	if len(got) != 1 || got[0][fam.l.yIndex(dis, 1)] != 1 || got[0][fam.l.yIndex(gen, 1)] != 0 {
		t.Errorf("alternates of %v: %v", y, got)
	}
}

// Every reference model writes exactly the rows its layout tags (ShiftDuals and the soft problem
// rely on the tags), and its soft problem keeps the rows and binaries in place.
func TestRowTags(t *testing.T) {
	for _, f := range []string{pumpStationFile, microgridFile, coolingFile, "testdata/good.yaml"} {
		fam, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		m := fam.Model()
		in := m.Sample(seeded())
		mm := &Measurement{Inst: in, fam: fam}
		p, _ := mm.Problem()
		if len(p.Ineq) != len(fam.l.rows.Ineq) || len(p.Eq) != len(fam.l.rows.Eq) || p.NX != fam.l.nx {
			t.Errorf("%s: %d/%d rows, tags %d/%d", f, len(p.Ineq), len(p.Eq), len(fam.l.rows.Ineq), len(fam.l.rows.Eq))
		}
		for _, lr := range fam.l.limits {
			name := p.Ineq[lr.row].Name
			if want := map[bool]string{false: "min_", true: "max_"}[lr.upper] + m.States[lr.state].Name; !strings.HasPrefix(name, want) {
				t.Errorf("%s: limit row %d is %q, want %s…", f, lr.row, name, want)
			}
		}
		sp, _, err := mm.SoftProblem()
		if err != nil {
			continue // no hard limits
		}
		if len(sp.Ineq) != len(p.Ineq) || len(sp.Eq) != len(p.Eq) || sp.NY != p.NY {
			t.Errorf("%s: the soft problem moves rows", f)
		}
		if err := sp.Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
