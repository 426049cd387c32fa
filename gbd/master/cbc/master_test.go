package cbc

import (
	"math"
	"math/rand"
	"testing"

	"gbdmpc/internal/knob"
)

// TestMasterBruteForce checks Solve on random GBD masters against
// enumeration of every y. Some instances carry feasibility cuts that make
// them infeasible; those must come back Infeasible.
func TestMasterBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(20240611))
	n := knob.Size(200, 40)
	var infeasible, withFeas int
	for i := 0; i < n; i++ {
		ny := 5 + rng.Intn(8)
		nOpt := 1 + rng.Intn(40)
		nFeas := 0
		if rng.Intn(4) == 0 {
			nFeas = 1 + rng.Intn(3)
			withFeas++
		}
		m := randomMaster(rng, ny, nOpt, nFeas)
		// Every tenth instance also runs with CBC's defaults so both
		// parameter sets are held to the same answers.
		presets := []Preset{PresetAuto}
		if i%10 == 0 {
			presets = append(presets, PresetCBC)
		}
		want, _ := m.brute()
		if math.IsInf(want, 1) {
			infeasible++
		}
		for _, preset := range presets {
			p := m.problem()
			r, err := Solve(p, Options{Preset: preset})
			if err != nil {
				t.Fatalf("instance %d: %v", i, err)
			}
			if math.IsInf(want, 1) {
				if r.Status != Infeasible {
					t.Errorf("instance %d (preset %d): status %v, brute force says infeasible", i, preset, r.Status)
				}
				continue
			}
			if r.Status != Optimal {
				t.Fatalf("instance %d (preset %d): status %v raw %+v", i, preset, r.Status, r.Raw)
			}
			if math.Abs(r.Obj-want) > 1e-6 {
				t.Errorf("instance %d (preset %d): obj %.9g, brute force %.9g", i, preset, r.Obj, want)
			}
			if math.Abs(r.BestBound-r.Obj) > 1e-9 {
				t.Errorf("instance %d: optimal with bound %g != obj %g", i, r.BestBound, r.Obj)
			}
			y := r.X[:ny]
			for j, v := range y {
				if v != 0 && v != 1 {
					t.Fatalf("instance %d: y[%d] = %g not binary", i, j, v)
				}
			}
			if got := m.eval(y); math.Abs(got-want) > 1e-6 {
				t.Errorf("instance %d: returned y evaluates to %.9g, optimum %.9g", i, got, want)
			}
			checkFeasible(t, p, r.X, 1e-6)
		}
	}
	t.Logf("%d instances, %d with feasibility cuts, %d infeasible", n, withFeas, infeasible)
	if !testing.Short() && (infeasible == 0 || infeasible == withFeas) {
		t.Errorf("generator should produce both feasible and infeasible instances with feasibility cuts")
	}
}
