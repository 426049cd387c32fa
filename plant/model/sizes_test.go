package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/internal/knob"
	"gbdmpc/plant/pumpstation"
)

// TestPumpStationSizesMatchBuiltin: the 24- and 40-binary stations written as models
// (configs/models/pumpstation-24.yaml, -40.yaml) give the built-in family's status and optimum, to
// 1e-6 relative, on seeded instances of the station's daily profile, each solved by classical GBD
// with master auto (enum over the 24-binary station's 119,713 plans, the staged master on the
// 40-binary station's implicit Y_pb). Both families are solved side by side in alternating order,
// and the log gives the model's solve time relative to the built-in's.
func TestPumpStationSizesMatchBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("two dozen GBD solves of 24 and 40 binaries")
	}
	n := knob.Env(t, "GBDMPC_SIZES_INSTANCES", 6, 1)
	for _, tc := range []struct {
		binaries int
		master   string // what auto resolves to
	}{{24, "enum"}, {40, "staged"}} {
		t.Run(fmt.Sprint(tc.binaries), func(t *testing.T) {
			c, err := pumpstation.SizedConfig(tc.binaries)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := pumpstation.NewFamily(c)
			if err != nil {
				t.Fatal(err)
			}
			fam, err := Load(filepath.Join("..", "..", "configs", "models", fmt.Sprintf("pumpstation-%d.yaml", tc.binaries)))
			if err != nil {
				t.Fatal(err)
			}
			yp, ym := ps.Admissible(), fam.Admissible()
			if yp.NY != ym.NY || yp.Implicit() != ym.Implicit() || len(yp.Stages) != len(ym.Stages) ||
				!yp.Implicit() && yp.Signature != ym.Signature {
				t.Fatalf("Y_pb differs: builtin %d binaries, implicit %v, %d stages; model %d, %v, %d",
					yp.NY, yp.Implicit(), len(yp.Stages), ym.NY, ym.Implicit(), len(ym.Stages))
			}
			newBuiltin, nb, err := backend.MasterFor(backend.AutoMasterName, yp)
			if err != nil {
				t.Fatal(err)
			}
			newModel, nm, err := backend.MasterFor(backend.AutoMasterName, ym)
			if err != nil {
				t.Fatal(err)
			}
			if nb != tc.master || nm != tc.master {
				t.Fatalf("master auto: builtin %s, model %s; want %s", nb, nm, tc.master)
			}
			prof := pumpstation.DefaultProfile()
			rng := rand.New(rand.NewPCG(37, uint64(tc.binaries)))
			set := gbd.Settings{Eps: 1e-7}
			var tBuiltin, tModel time.Duration
			worst, feasible := 0.0, 0
			for i := range n {
				in := pumpstation.Sample(rng, &c, &prof)
				pm, mm := measureBoth(t, ps, fam, in)
				pp, _ := pm.Problem()
				mp, _ := mm.Problem()
				var rp, rm *gbd.Result
				solve := func(p *gbd.Problem, ypb *gbd.Admissible, m gbd.Master, r **gbd.Result, d *time.Duration) {
					t0 := time.Now()
					if *r, err = (&gbd.Engine{Master: m}).Solve(p, ypb, set); err != nil {
						t.Fatal(err)
					}
					*d += time.Since(t0)
				}
				// Alternating order, so that neither family always runs on warm caches.
				if i%2 == 0 {
					solve(pp, yp, newBuiltin(), &rp, &tBuiltin)
					solve(mp, ym, newModel(), &rm, &tModel)
				} else {
					solve(mp, ym, newModel(), &rm, &tModel)
					solve(pp, yp, newBuiltin(), &rp, &tBuiltin)
				}
				if rp.Status != rm.Status {
					t.Errorf("instance %d: builtin %v, model %v", i, rp.Status, rm.Status)
					continue
				}
				if rp.Status == gbd.StatusInfeasible {
					continue
				}
				if rp.Status != gbd.StatusOptimal {
					t.Errorf("instance %d: %v without a deadline", i, rp.Status)
					continue
				}
				feasible++
				rel := math.Abs(rp.Objective-rm.Objective) / math.Max(1e-9, math.Abs(rp.Objective))
				worst = math.Max(worst, rel)
				if rel > 1e-6 {
					t.Errorf("instance %d: builtin optimum %.10g, model %.10g (relative %.2g)", i, rp.Objective, rm.Objective, rel)
				}
			}
			t.Logf("%d binaries, master %s: %d of %d instances optimal in both, worst relative difference %.2g; solve time builtin %v, model %v (ratio model/builtin %.2f)",
				tc.binaries, tc.master, feasible, n, worst, tBuiltin.Round(time.Millisecond), tModel.Round(time.Millisecond), tModel.Seconds()/tBuiltin.Seconds())
		})
	}
}
