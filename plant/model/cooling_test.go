package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"gbdmpc/gbd"
)

var coolingFile = filepath.Join("..", "..", "configs", "models", "building-cooling.yaml")

// TestCoolingGroundTruth: on seeded instances of configs/models/building-cooling.yaml, GBD finds
// the brute-force optimum (every admissible plan's NLP solved), and the soft reserve limit is
// priced: its violation variables appear in the problem and hold the tank's shortfall.
func TestCoolingGroundTruth(t *testing.T) {
	fam, err := Load(coolingFile)
	if err != nil {
		t.Fatal(err)
	}
	ypb := fam.Admissible()
	m := fam.Model()
	n := 3
	if testing.Short() {
		n = 1
	}
	rng := rand.New(rand.NewPCG(37, 9))
	for i := range n {
		in := m.Sample(rng)
		mm, err := fam.DecodeMeasurement(m.MarshalInstance(&in))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := mm.Problem()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := (&gbd.Engine{Master: &gbd.StagedMaster{}}).Solve(p, ypb, gbd.Settings{Eps: 1e-7})
		if err != nil {
			t.Fatal(err)
		}
		if !gt.Feasible {
			if r.Status != gbd.StatusInfeasible {
				t.Errorf("instance %d: brute force infeasible, GBD %v", i, r.Status)
			}
			continue
		}
		if r.Y == nil || math.Abs(r.Objective-gt.Objective) > 1e-6*math.Max(1, math.Abs(gt.Objective)) {
			t.Errorf("instance %d: GBD %v objective %.9g, brute force %.9g", i, r.Status, r.Objective, gt.Objective)
			continue
		}
		// Every soft-limit violation variable equals the tank's shortfall below soft_min.
		l := fam.l
		st := &m.States[0]
		for tt := 1; tt <= l.n; tt++ {
			short := math.Max(0, st.SoftMin-r.X[l.stateIndex(0, tt)])
			if v := r.X[l.softLo[0]+tt-1]; math.Abs(v-short) > 1e-4 {
				t.Errorf("instance %d, step %d: violation %v, shortfall %v", i, tt, v, short)
			}
		}
		t.Logf("instance %d: tank %.0f kWh, optimum %.4f € at y=%v (|Y_pb| = %d)", i, in.States[0], gt.Objective, gt.Y, ypb.Count())
	}
}
