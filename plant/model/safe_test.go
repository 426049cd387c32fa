package model

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gbdmpc/plant/pumpstation"
)

// TestSafeHoldMatchesBuiltin: the pump-station model's safe_hold gives the built-in station's
// level-holding safe action, the same pumps at the same flows (to rounding: the model computes
// in metres of level, the station in m³/h), on sampled instances at levels across the tank.
func TestSafeHoldMatchesBuiltin(t *testing.T) {
	fam := loadPumpStation(t)
	ps, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, prof := pumpstation.DefaultConfig(), pumpstation.DefaultProfile()
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 400 {
		in := pumpstation.Sample(rng, &c, &prof)
		in.Level = c.PhysMin + float64(i%40)/39*(c.PhysMax-c.PhysMin)
		pm, mm := measureBoth(t, ps, fam, in)
		var want pumpstation.ApplyJSON
		if err := json.Unmarshal(ps.SafeActionFor(pm), &want); err != nil {
			t.Fatal(err)
		}
		a := fam.SafeActionFor(mm)
		q, on, err := fam.DecodeApply(a)
		if err != nil {
			t.Fatalf("instance %d: the plant refuses %s: %v", i, a, err)
		}
		for p := range on {
			if on[p] != want.PumpsOn[p] || math.Abs(q[p]-want.Flow[p]) > 1e-9*math.Max(1, want.Flow[p]) {
				t.Fatalf("instance %d (level %.3f m, demand %.1f m³/h): model %s, builtin %+v", i, in.Level, in.Demand[0], a, want)
			}
		}
	}
}

// A configured safe action replaces safe_hold; a model without safe_hold keeps its fixed one.
func TestSafeHoldReplaced(t *testing.T) {
	fam := loadPumpStation(t)
	in := groundTruthInstances()[0]
	mm, err := fam.DecodeMeasurement(asModelMeasurement(in))
	if err != nil {
		t.Fatal(err)
	}
	fixed := `{"q1":0,"q2":45,"q3":0,"p1":0,"p2":1,"p3":0}`
	g, err := fam.WithSafeAction([]byte(fixed))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(g.SafeActionFor(mm)); got != fixed {
		t.Errorf("configured safe action %s, got %s", fixed, got)
	}
	mg, err := Load(microgridFile)
	if err != nil {
		t.Fatal(err)
	}
	mgm, err := mg.DecodeMeasurement(mg.Model().MarshalInstance(ptr(mg.Model().Sample(seeded()))))
	if err != nil {
		t.Fatal(err)
	}
	if string(mg.SafeActionFor(mgm)) != string(mg.SafeAction()) {
		t.Errorf("a model without safe_hold: %s, want its fixed %s", mg.SafeActionFor(mgm), mg.SafeAction())
	}
}

func ptr[T any](v T) *T { return &v }

// A battery's safe_hold charges when the state of charge is below ref, discharges (an input that
// lowers it) when above, and idles at ref; the exclusive pair is never both on.
func TestSafeHoldBattery(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "bad", "safe_value_unit_off.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(base), ", safe: 2}", "}", 1) + "safe_hold: {state: soc, ref: 5}\n"
	m, err := Parse("battery.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fam, err := NewFamily(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		soc     float64
		in      []float64 // charge, discharge, grid
		ch, dis int
	}{
		{2, []float64{3 / 0.9, 0, 0}, 1, 0},
		{8, []float64{0, 3, 0}, 0, 1},
		{5, []float64{0, 0, 0}, 0, 0},
		{9.95, []float64{0, 4.95, 0}, 0, 1},
	} {
		mm, err := fam.DecodeMeasurement([]byte(fmt.Sprintf(`{"v":1,"soc":%v,"ch":0,"dis":0,"load":[1,1,1,1],"price":[0.1,0.1,0.1,0.1]}`, tc.soc)))
		if err != nil {
			t.Fatal(err)
		}
		a := fam.SafeActionFor(mm)
		in, on, err := fam.DecodeApply(a)
		if err != nil {
			t.Fatalf("soc %v: the plant refuses %s: %v", tc.soc, a, err)
		}
		ok := on[0] == tc.ch && on[1] == tc.dis
		for i := range in {
			ok = ok && math.Abs(in[i]-tc.in[i]) <= 1e-9
		}
		if !ok {
			t.Errorf("soc %v: %s, want inputs %v, ch %d, dis %d", tc.soc, a, tc.in, tc.ch, tc.dis)
		}
	}
}
