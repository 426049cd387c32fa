package model

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/plant/pumpstation"
)

// pumpStationFile is the pump station written as a model.
var pumpStationFile = filepath.Join("..", "..", "configs", "models", "pumpstation.yaml")

func loadPumpStation(t testing.TB) *Family {
	t.Helper()
	f, err := Load(pumpStationFile)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// asModelMeasurement writes a pump-station instance as the model's measurement: the pumps' states
// by unit name.
func asModelMeasurement(in pumpstation.Instance) []byte {
	m := map[string]any{"v": 1, "level_m": in.Level, "demand_m3h": in.Demand, "price_eur_kwh": in.Price}
	for p, on := range in.PumpsOn {
		m[fmt.Sprintf("p%d", p+1)] = on
	}
	b, _ := json.Marshal(m)
	return b
}

// measureBoth is one pump-station instance as a measurement of the built-in family and of its
// model.
func measureBoth(t testing.TB, ps *pumpstation.Family, fam *Family, in pumpstation.Instance) (*pumpstation.Measurement, *Measurement) {
	t.Helper()
	pm, err := ps.Measure(in)
	if err != nil {
		t.Fatal(err)
	}
	mm, err := fam.DecodeMeasurement(asModelMeasurement(in))
	if err != nil {
		t.Fatal(err)
	}
	return pm, mm.(*Measurement)
}

// groundTruthInstances are 50 seeded draws of the pump station's daily profile (its Sample), with
// every fifth one's level pushed to a limit's edge so that feasibility cuts are part of the suite,
// and every tenth one's below what the pumps can lift back within a step (infeasible).
func groundTruthInstances() []pumpstation.Instance {
	c, prof := pumpstation.DefaultConfig(), pumpstation.DefaultProfile()
	rng := rand.New(rand.NewPCG(37, 50))
	out := make([]pumpstation.Instance, 50)
	for i := range out {
		out[i] = pumpstation.Sample(rng, &c, &prof)
		switch {
		case i%10 == 9:
			out[i].Level = 0.2
			out[i].Demand[0] = 150
		case i%5 == 4:
			out[i].Level = 4.95
		}
	}
	return out
}

// Both transcriptions have the same value at the same point: the model file is the pump station.
func TestPumpStationSameObjective(t *testing.T) {
	fam := loadPumpStation(t)
	c := pumpstation.DefaultConfig()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, in := range groundTruthInstances()[:10] {
		pp := pumpstation.Problem(&c, &in)
		mm, err := fam.DecodeMeasurement(asModelMeasurement(in))
		if err != nil {
			t.Fatal(err)
		}
		mp, err := mm.Problem()
		if err != nil {
			t.Fatal(err)
		}
		if err := mp.Validate(); err != nil {
			t.Fatal(err)
		}
		if pp.NY != mp.NY || len(pp.Pure) != len(mp.Pure) {
			t.Fatalf("builtin NY=%d with %d pure rows, model NY=%d with %d", pp.NY, len(pp.Pure), mp.NY, len(mp.Pure))
		}
		// A random point of the model's box, mapped to the builtin layout by variable name.
		idx := map[string]int{}
		for i, name := range pp.XNames {
			idx[name] = i
		}
		xm := make([]float64, mp.NX)
		xp := make([]float64, pp.NX)
		for i := range xm {
			xm[i] = mp.XLo[i] + rng.Float64()*(mp.XHi[i]-mp.XLo[i])
			var j int
			var ok bool
			var p, tt int
			switch {
			case sscan(mp.XNames[i], "q%d[%d]", &p, &tt):
				j, ok = idx[fmt.Sprintf("q[%d,%d]", p, tt)]
			case sscan(mp.XNames[i], "level_m[%d]", &tt):
				j, ok = idx[fmt.Sprintf("h[%d]", tt)]
			case sscan(mp.XNames[i], "start_p%d[%d]", &p, &tt):
				j, ok = idx[fmt.Sprintf("s[%d,%d]", p, tt+1)]
			}
			if !ok {
				t.Fatalf("model variable %s has no builtin counterpart", mp.XNames[i])
			}
			xp[j] = xm[i]
		}
		y := make([]float64, mp.NY)
		for i := range y {
			y[i] = float64(rng.IntN(2))
		}
		vp, _ := pp.Objective.Eval(xp, y)
		vm, _ := mm.(*Measurement).fam.Problem(&mm.(*Measurement).Inst).Objective.Eval(xm, y)
		if math.Abs(vp-vm) > 1e-9*math.Max(1, math.Abs(vp)) {
			t.Errorf("objective at the same point: builtin %.12g, model %.12g", vp, vm)
		}
	}
}

func sscan(s, format string, a ...any) bool {
	n, err := fmt.Sscanf(s, format, a...)
	return err == nil && n == len(a)
}

// TestPumpStationMatchesBuiltin solves the 50 ground-truth instances with the built-in family and
// with configs/models/pumpstation.yaml, side by side, and wants the same optimum to 1e-6 relative
// (and the same infeasibility).
func TestPumpStationMatchesBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("50 GBD solves per family")
	}
	fam := loadPumpStation(t)
	ps, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if ps.Admissible().Signature != fam.Admissible().Signature {
		t.Fatalf("Y_pb differs: builtin %d assignments, model %d", ps.Admissible().Count(), fam.Admissible().Count())
	}
	set := gbd.Settings{Eps: 1e-7}
	var tBuiltin, tModel time.Duration
	var itBuiltin, itModel int
	worst, feasible := 0.0, 0
	for i, in := range groundTruthInstances() {
		pm, mm := measureBoth(t, ps, fam, in)
		pp, _ := pm.Problem()
		mp, _ := mm.Problem()
		// Side by side, in alternating order, so that neither family always runs on warm caches.
		var rp, rm *gbd.Result
		solveBuiltin := func() {
			t0 := time.Now()
			if rp, err = (&gbd.Engine{Master: &enum.Master{}}).Solve(pp, ps.Admissible(), set); err != nil {
				t.Fatal(err)
			}
			tBuiltin += time.Since(t0)
		}
		solveModel := func() {
			t0 := time.Now()
			if rm, err = (&gbd.Engine{Master: &enum.Master{}}).Solve(mp, fam.Admissible(), set); err != nil {
				t.Fatal(err)
			}
			tModel += time.Since(t0)
		}
		if i%2 == 0 {
			solveBuiltin()
			solveModel()
		} else {
			solveModel()
			solveBuiltin()
		}
		itBuiltin, itModel = itBuiltin+rp.Iterations, itModel+rm.Iterations
		if rp.Status != rm.Status {
			t.Errorf("instance %d: builtin %v, model %v", i, rp.Status, rm.Status)
			continue
		}
		if rp.Status == gbd.StatusInfeasible {
			continue
		}
		feasible++
		rel := math.Abs(rp.Objective-rm.Objective) / math.Max(1e-9, math.Abs(rp.Objective))
		worst = math.Max(worst, rel)
		if rel > 1e-6 {
			t.Errorf("instance %d: builtin optimum %.10g, model %.10g (relative %.2g)", i, rp.Objective, rm.Objective, rel)
		}
		// The plan reads back: the first move of the model's plan is the builtin's.
		if _, err := fam.PlanFrom(mm, rm); err != nil {
			t.Errorf("instance %d: %v", i, err)
		}
	}
	t.Logf("%d feasible of 50, worst relative difference %.2g; solve time builtin %v, model %v (ratio %.2f); GBD iterations builtin %d, model %d",
		feasible, worst, tBuiltin, tModel, tModel.Seconds()/tBuiltin.Seconds(), itBuiltin, itModel)
}
