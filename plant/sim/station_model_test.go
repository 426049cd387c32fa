package sim

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/internal/knob"
	"gbdmpc/mpc"
	"gbdmpc/plant/model"
)

// TestModelControlsSameDay closes the loop of the simulated station twice on the same seeded day:
// once planned by the built-in family, once by configs/models/pumpstation.yaml (the station
// written as a model). With a tight ε both certify every step's optimum, so the two days must be
// one: the same pumps at every step, the same commanded flows and level to the NLP's tolerance, and
// the same cost.
func TestModelControlsSameDay(t *testing.T) {
	steps := knob.Size(12, 4)
	fam, err := model.Load(filepath.Join("..", "..", "configs", "models", "pumpstation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctrl mpc.Family) *Run {
		r, err := RunClosedLoop(context.Background(), LoopOptions{Sim: DefaultConfig(), Steps: steps,
			MPC: mpc.Options{Settings: gbd.Settings{Eps: 1e-7}}, Controller: ctrl})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	builtin, byModel := run(nil), run(fam)
	for k := range steps {
		b, m := &builtin.Steps[k], &byModel.Steps[k]
		if b.Status != mpc.StatusOptimal || m.Status != mpc.StatusOptimal {
			t.Fatalf("step %d: builtin %s, model %s; both should certify", k, b.Status, m.Status)
		}
		for p := range b.On {
			if b.On[p] != m.On[p] || math.Abs(b.FlowCmd[p]-m.FlowCmd[p]) > 1e-3 {
				t.Errorf("step %d, pump %d: builtin on %d at %.6f m³/h, model on %d at %.6f m³/h", k, p+1, b.On[p], b.FlowCmd[p], m.On[p], m.FlowCmd[p])
			}
		}
		if math.Abs(b.LevelEnd-m.LevelEnd) > 1e-4 {
			t.Errorf("step %d: level %.6f m after the builtin's action, %.6f after the model's", k, b.LevelEnd, m.LevelEnd)
		}
	}
	cb, cm := builtin.Summary.CostEUR, byModel.Summary.CostEUR
	if math.Abs(cb-cm) > 1e-5*math.Max(1, cb) {
		t.Errorf("day's cost: builtin %.6f €, model %.6f €", cb, cm)
	}
	t.Logf("%d steps: cost builtin %.4f €, model %.4f €", steps, cb, cm)
}
