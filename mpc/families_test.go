package mpc_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/synthesis"
)

// TestSynthesisFamily: the one-shot family decodes a measurement, solves it to the ground truth
// and keeps its design when shifted.
func TestSynthesisFamily(t *testing.T) {
	fam := synthesis.NewFamily()
	ctrl, err := mpc.NewController(fam, mpc.Options{Settings: gbd.Settings{Eps: 1e-7}})
	if err != nil {
		t.Fatal(err)
	}
	in := synthesis.SampleFeasible(rand.New(rand.NewPCG(1, 2)))
	payload, _ := json.Marshal(struct {
		synthesis.Instance
		Seq  int   `json:"seq"`
		TsMs int64 `json:"ts_ms"`
	}{in, 3, 1700000000000})
	d := stepOptimal(t, ctrl, fam.DecodeMeasurement, payload)
	gt, err := gbd.SolveByEnumeration(synthesis.Problem(in), fam.Admissible(), nil, gbd.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d.Objective-gt.Objective) > 1e-6*(1+math.Abs(gt.Objective)) || !slices.Equal(d.Y, gt.Y) {
		t.Errorf("controller found %v at y=%v, ground truth %v at y=%v", d.Objective, d.Y, gt.Objective, gt.Y)
	}
	var plan struct{ Y, X []float64 }
	if err := json.Unmarshal(d.Apply, &plan); err != nil || !slices.Equal(plan.Y, d.Y) || len(plan.X) != synthesis.NX {
		t.Errorf("apply %s: %v", d.Apply, err)
	}
	next, ok := ctrl.Plan().Shift()
	if !ok || string(next.Apply()) != string(d.Apply) {
		t.Errorf("shifted design differs: %s vs %s", next.Apply(), d.Apply)
	}
	if _, err := fam.DecodeMeasurement([]byte(`{"v":1,"gamma":[1,2],"U":1,"rho":[1,1]}`)); err == nil {
		t.Error("short gamma accepted")
	}
}

// stepOptimal makes a measurement of in and steps the controller on it, which must end optimal.
func stepOptimal[In any, M mpc.Measurement](t *testing.T, ctrl *mpc.Controller, measure func(In) (M, error), in In) mpc.Decision {
	t.Helper()
	m, err := measure(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctrl.Step(m, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != mpc.StatusOptimal {
		t.Fatalf("status %s (%s)", d.Status, d.Reason)
	}
	return d
}

// TestPumpStationSteps runs two control periods of the pump station through the controller: the
// second starts from the first plan shifted, and the published action is the plan's first move.
func TestPumpStationSteps(t *testing.T) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rec := &firstIterates{}
	ctrl, err := mpc.NewController(fam, mpc.Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	c := fam.Config()
	in := pumpstation.SampleAt(rand.New(rand.NewPCG(5, 6)), &c, ptrTo(pumpstation.DefaultProfile()), 6)
	var prevY []float64
	for k := range 2 {
		d := stepOptimal(t, ctrl, fam.Measure, in)
		if string(d.Apply) != string(ctrl.Plan().Apply()) {
			t.Errorf("step %d: published %s, plan starts with %s", k, d.Apply, ctrl.Plan().Apply())
		}
		if k == 1 && len(rec.first) > 1 && !slices.Equal(rec.first[1], prevY) {
			t.Errorf("second solve started at %v, want the shifted pattern %v", rec.first[1], prevY)
		}
		prevY = d.Y // one step later the pattern is unchanged (blocks of 4 steps)
		// The next measurement: the plant followed the plan for one step.
		pl := ctrl.Plan().(*pumpstation.Plan)
		in.Level = pl.Level[0]
		for p := range in.PumpsOn {
			in.PumpsOn[p] = pl.On[p][0]
		}
		in.Demand = mpc.ShiftSteps(in.Demand, 1)
		in.Price = mpc.ShiftSteps(in.Price, 1)
	}
}

type firstIterates struct{ first [][]float64 }

func (r *firstIterates) RecordMaster(_ *gbd.MasterView, it *gbd.Iteration) {
	if it.K == 0 {
		r.first = append(r.first, append([]float64(nil), it.Y...))
	}
}

func ptrTo[T any](v T) *T { return &v }
