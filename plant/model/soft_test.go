package model

import (
	"math"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/mpc"
)

// An instance whose level cannot be lifted to the lower limit in one step is proven infeasible by
// the pre-check, and the controller applies the soft optimum, marked relaxed with the limit it
// breaks; a servable one's soft optimum is the hard optimum and holds the limits.
func TestSoftFallback(t *testing.T) {
	fam := loadPumpStation(t)
	ins := groundTruthInstances()
	low := ins[9] // level 0.2 m, 150 m³/h drawn in the first step
	if low.Level != 0.2 {
		t.Fatalf("instance 9 is not the low-level one: %v", low.Level)
	}
	mm, err := fam.DecodeMeasurement(asModelMeasurement(low))
	if err != nil {
		t.Fatal(err)
	}
	if why := mm.(*Measurement).Unholdable(); why == "" {
		t.Error("the pre-check did not prove the low level unholdable")
	}
	ctrl, err := mpc.NewController(fam, mpc.Options{Settings: gbd.Settings{Eps: 1e-7}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctrl.Step(mm, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d.Relaxed == nil || d.Kind != mpc.Soft {
		t.Fatalf("decision %s (%s) is not relaxed", d.Status, d.Reason)
	}
	if d.Relaxed.Limit != "min_level_m" || d.Relaxed.FirstStep != 0 || !(d.Relaxed.MaxViolation > 0 && d.Relaxed.MaxViolation <= 0.8+1e-6) {
		t.Errorf("relaxation %+v", *d.Relaxed)
	}
	// Only the level's own lift limits the violation: the pumps run flat out at the first step.
	in, _, err := fam.DecodeApply(d.Apply)
	if err != nil {
		t.Fatal(err)
	}
	if q := in[0] + in[1] + in[2]; q < 240-1e-6 {
		t.Errorf("first-step flow %v m³/h while the tank is below its limit; two largest pumps give 240", q)
	}

	ok := ins[0]
	mm, err = fam.DecodeMeasurement(asModelMeasurement(ok))
	if err != nil {
		t.Fatal(err)
	}
	m := mm.(*Measurement)
	if why := m.Unholdable(); why != "" {
		t.Fatalf("a servable instance was called unholdable: %s", why)
	}
	hp, _ := m.Problem()
	sp, bound, err := m.SoftProblem()
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
	rh, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(hp, fam.Admissible(), gbd.Settings{Eps: 1e-7})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(sp, fam.Admissible(), gbd.Settings{Eps: 1e-7})
	if err != nil {
		t.Fatal(err)
	}
	if rh.Y == nil || rs.Y == nil {
		t.Fatalf("hard %v, soft %v", rh.Status, rs.Status)
	}
	if math.Abs(rh.Objective-rs.Objective) > 1e-6*math.Abs(rh.Objective) {
		t.Errorf("soft optimum %.10g, hard %.10g", rs.Objective, rh.Objective)
	}
	if rh.Objective > bound {
		t.Errorf("hard optimum %v above the bound %v", rh.Objective, bound)
	}
	if _, violated := m.Relaxation(rs.X); violated {
		t.Error("the soft optimum of a servable instance breaks a limit")
	}
	if x := m.SoftStart(rh.X); len(x) != sp.NX {
		t.Errorf("SoftStart gives %d values, want %d", len(x), sp.NX)
	}
}
