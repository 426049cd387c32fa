package testbed

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/controller"
	"gbdmpc/internal/testsupport"
	"gbdmpc/plant/sim"
	"gbdmpc/solver"
	"gbdmpc/telemetry"
)

// The simulated pump station closes the loop with the real daemon (Ipopt solves) over the embedded
// broker, and the run's outputs, figure included, are written.
func TestTestbedClosesTheLoop(t *testing.T) {
	testsupport.Long(t, "real pump-station solves")
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "pump1", Family: "pumpstation", Period: 3 * time.Second, Deadline: 2500 * time.Millisecond,
		MaxAge: 3 * time.Second, Spec: solver.Spec{TMin: 20 * time.Millisecond, TMax: 100 * time.Millisecond}})
	cfg.DecisionLog.Dir = t.TempDir()
	d := startDaemon(t, cfg, controller.Deps{})
	out := t.TempDir()
	var seen []uint64
	res, err := RunTestbed(t.Context(), TestbedOptions{
		BrokerURL: d.info.BrokerURL, PlantID: "pump1", Steps: 4, Period: 3 * time.Second,
		Sim: sim.DefaultConfig(), OutDir: out, KeepPayloads: true,
		OnStep: func(s TestbedStep) { seen = append(seen, s.Seq) },
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Steps != 4 || s.ActionsReceived != 4 || s.MissedPeriods != 0 || len(seen) != 4 {
		t.Errorf("summary %+v (steps seen %v)", s, seen)
	}
	if s.Optimal+s.Gap+s.Fallbacks != 4 || s.LatencyP50 <= 0 || s.LatencyMax > 3 {
		t.Errorf("statuses/latency %+v", s)
	}
	for i, st := range res.Steps {
		if st.Action == nil || st.Action.MeasurementSeq != st.Seq || len(st.Measurement) == 0 {
			t.Errorf("step %d: %+v", i, st)
		}
	}
	for _, f := range []string{"figure.png", "steps.csv", "summary.json"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	d.stop()

	// The decision log has every period's solve and the master problems behind them.
	recs, err := telemetry.ReadAll(telemetry.Filter{}, cfg.DecisionLog.Dir)
	if err != nil {
		t.Fatal(err)
	}
	solves, masters := 0, 0
	for _, r := range recs {
		if r.Plant != "pump1" || r.Family != "pumpstation" || r.Step == 0 {
			t.Errorf("record header %+v", r)
		}
		switch r.Type {
		case telemetry.TypeSolve:
			solves++
		case telemetry.TypeMaster:
			masters++
			if r.Master.NY != 12 || len(r.Master.Cuts) == 0 || len(r.Master.Instance) == 0 {
				t.Errorf("master record %+v", r.Master)
			}
		}
	}
	if solves != 4 || masters == 0 {
		t.Errorf("decision log: %d solve and %d master records, want 4 and some", solves, masters)
	}
}
