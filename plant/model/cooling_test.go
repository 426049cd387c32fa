package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/gbd/master/staged"
	"gbdmpc/internal/knob"
)

var coolingFile = filepath.Join("..", "..", "configs", "models", "building-cooling.yaml")

// TestCoolingGroundTruth: on seeded instances of configs/models/building-cooling.yaml (4; 1 under
// -short; GBDMPC_GROUND_TRUTH_INSTANCES=50 for the 50, about 4 minutes), classical GBD with master auto (enum here) and with the staged master has the status
// and, when feasible, the optimum (to 1e-6 relative) of brute force (every admissible plan's NLP
// solved), and the soft reserve limit is priced: its violation variables appear in the problem and
// hold the tank's shortfall.
func TestCoolingGroundTruth(t *testing.T) {
	fam, err := Load(coolingFile)
	if err != nil {
		t.Fatal(err)
	}
	ypb := fam.Admissible()
	m := fam.Model()
	n := knob.Env(t, "GBDMPC_GROUND_TRUTH_INSTANCES", knob.Size(4, 1), 1)
	auto, name, err := backend.MasterFor(backend.AutoMasterName, ypb)
	if err != nil || name != "enum" {
		t.Fatalf("master auto on |Y_pb| = %d: %s, %v; want enum", ypb.Count(), name, err)
	}
	agree, feasible := 0, 0
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
		var r *gbd.Result
		ok := true
		for _, master := range []gbd.Master{auto(), &staged.Master{}} {
			if r, err = (&gbd.Engine{Master: master}).Solve(p, ypb, gbd.Settings{Eps: 1e-7 * math.Max(1, math.Abs(gt.Objective))}); err != nil {
				t.Fatal(err)
			}
			switch {
			case !gt.Feasible && r.Status != gbd.StatusInfeasible:
				t.Errorf("instance %d, %T: brute force infeasible, GBD %v", i, master, r.Status)
				ok = false
			case gt.Feasible && (r.Status != gbd.StatusOptimal || r.Y == nil ||
				math.Abs(r.Objective-gt.Objective) > 1e-6*math.Max(1, math.Abs(gt.Objective))):
				t.Errorf("instance %d, %T: GBD %v objective %.9g, brute force %.9g", i, master, r.Status, r.Objective, gt.Objective)
				ok = false
			}
		}
		if ok {
			agree++
		}
		if !ok || !gt.Feasible {
			continue
		}
		feasible++
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
	t.Logf("building-cooling ground truth: %d/%d instances agree with brute force, %d of them feasible (%d plans each)", agree, n, feasible, ypb.Count())
}
