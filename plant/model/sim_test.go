package model

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// TestClosedLoopMicrogrid runs the microgrid model against its simulated plant: every step is
// decided (no fallback), the plant accepts every action, the battery stays within its hard limits
// (the forecasts' errors are small next to its reserve), and the CSV has a row per step.
func TestClosedLoopMicrogrid(t *testing.T) {
	fam, err := Load(microgridFile)
	if err != nil {
		t.Fatal(err)
	}
	steps := 8
	if testing.Short() {
		steps = 3
	}
	recs, _, err := RunLoop(context.Background(), fam, LoopOptions{Sim: SimConfig{Seed: 4}, MPC: mpc.Options{Settings: gbd.Settings{Eps: 1e-6}}, Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	sm := fam.Summarize(recs)
	if sm.Steps != steps || sm.Statuses[mpc.StatusFallback] != 0 || sm.HardBreaches != 0 {
		t.Errorf("summary %+v", sm)
	}
	var b bytes.Buffer
	if err := fam.WriteCSV(&b, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != steps+1 || !strings.Contains(lines[0], "soc_kwh") || !strings.Contains(lines[0], "genset") {
		t.Errorf("csv:\n%s", b.String())
	}
	if _, _, err := RunLoop(context.Background(), fam, LoopOptions{}); err == nil {
		t.Error("a loop of no steps ran")
	}
}

// The simulated plant refuses an action the model does not allow and follows the dynamics.
func TestSimStep(t *testing.T) {
	fam := loadPumpStation(t)
	s := NewSim(fam, SimConfig{Seed: 1, Noise: 1e-9})
	h0 := s.in.States[0]
	d0 := s.in.Forecasts[0][0]
	if _, err := s.Step([]byte(`{"q1":0,"q2":10,"q3":0,"p1":0,"p2":1,"p3":0}`)); err == nil {
		t.Error("a flow below the pump's minimum was applied")
	}
	st, err := s.Step([]byte(`{"q1":0,"q2":60,"q3":0,"p1":0,"p2":1,"p3":0}`))
	if err != nil {
		t.Fatal(err)
	}
	want := h0 + 0.005*(60-d0)
	if diff := st.States[0] - want; diff > 1e-6 || diff < -1e-6 {
		t.Errorf("level %v after one step, want %v", st.States[0], want)
	}
}
