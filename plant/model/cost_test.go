package model

import (
	"bytes"
	"context"
	"image/png"
	"math"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// StepCost prices a pump-station step as specs/pumpstation.md writes it: energy at the price that
// came true, level tracking at the end level, running and (only for a pump off before) start
// costs; and the cooling model's soft reserve by its penalty.
func TestStepCost(t *testing.T) {
	fam := loadPumpStation(t)
	const price, h1 = 0.3, 3.4
	st := SimStep{Inputs: []float64{0, 60, 0}, On: []int{0, 1, 0}, States: []float64{h1}, Actual: []float64{80, price}}
	energy := price * 0.25 * (0.09*60 + 3.6*math.Pow(60.0/90, 3))
	run := 0.25 * 0.25
	track := 0.5 * (h1 - 3) * (h1 - 3)
	for _, tc := range []struct {
		prev []int
		want float64
	}{{[]int{0, 0, 0}, energy + run + 1.5 + track}, {[]int{0, 1, 0}, energy + run + track}} {
		if got := fam.StepCost(tc.prev, &st); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("pump 2 on after %v: cost %.12g, want %.12g", tc.prev, got, tc.want)
		}
	}

	cool, err := Load(coolingFile)
	if err != nil {
		t.Fatal(err)
	}
	// 100 kWh below the soft minimum of 500, chillers off: the penalty 0.5 per kWh, and the
	// terminal term (tank near 1000 kWh at the horizon's end) is not a step's cost.
	st = SimStep{Inputs: []float64{0, 0, 0}, On: []int{0, 0, 0}, States: []float64{400}, Actual: []float64{300, 0.2}}
	if got := cool.StepCost([]int{0, 0, 0}, &st); math.Abs(got-50) > 1e-9 {
		t.Errorf("cooling, tank 100 kWh short: cost %v, want 50", got)
	}
}

// The simulated plant's steps carry their cost, the day's summary adds them up, and the figure of
// a short loop is a PNG; with no steps there is nothing to draw.
func TestLoopCostAndFigure(t *testing.T) {
	fam, err := Load(coolingFile)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := RunLoop(context.Background(), fam, LoopOptions{Sim: SimConfig{Seed: 3}, MPC: mpc.Options{Settings: gbd.Settings{Eps: 1e-6}}, Steps: 4})
	if err != nil {
		t.Fatal(err)
	}
	sum, prev := 0.0, []int(nil)
	for k, r := range recs {
		if len(r.Start) != 1 || len(r.Forecast) != 2 {
			t.Fatalf("step %d: start %v, forecast %v", k, r.Start, r.Forecast)
		}
		if k > 0 && math.Abs(r.Start[0]-recs[k-1].States[0]) > 1e-12 {
			t.Errorf("step %d starts at %v, the previous one ended at %v", k, r.Start[0], recs[k-1].States[0])
		}
		if prev != nil {
			if want := fam.StepCost(prev, &recs[k].SimStep); math.Abs(r.Cost-want) > 1e-9 {
				t.Errorf("step %d: cost %v, StepCost %v", k, r.Cost, want)
			}
		}
		sum += r.Cost
		prev = r.On
	}
	sm := fam.Summarize(recs)
	if math.Abs(sm.Cost-sum) > 1e-9 || sm.Certified+sm.Statuses[mpc.StatusGap]+sm.Statuses[mpc.StatusFallback] != 4 || sm.P50SolveSeconds > sm.P95SolveSeconds {
		t.Errorf("summary %+v, steps cost %v", sm, sum)
	}
	var b bytes.Buffer
	if err := fam.WriteFigure(&b, recs, 800*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if w := img.Bounds().Dx(); w < 1000 {
		t.Errorf("figure %d px wide", w)
	}
	if err := fam.WriteFigure(&b, nil, 0); err == nil {
		t.Error("a figure of no steps was drawn")
	}
}
