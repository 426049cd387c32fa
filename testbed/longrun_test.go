package testbed

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/controller"
	"gbdmpc/internal/knob"
	"gbdmpc/internal/testsupport"
	"gbdmpc/plant/sim"
	"gbdmpc/solver"
)

// TestLongRunDeadlines is a measurement, not a test of the default suite: the real daemon (Ipopt,
// enumeration master) serves the simulated pump station over the embedded broker for 2,000 periods of
// 200 ms with a 150 ms deadline, then reports deadline misses (actions published after their
// deadline), missed periods, statuses and the process's peak and current RSS.
//
//	GBDMPC_LONG_RUN=1 go test ./testbed -run LongRunDeadlines -v -timeout 30m
//
// GBDMPC_LONG_STEPS and GBDMPC_LONG_PERIOD override 2000 and 200ms.
func TestLongRunDeadlines(t *testing.T) {
	knob.Measurement(t, "GBDMPC_LONG_RUN")
	steps := knob.Env(t, "GBDMPC_LONG_STEPS", 2000, 1)
	periods := knob.Durations(t, "GBDMPC_LONG_PERIOD", 200*time.Millisecond)
	if len(periods) != 1 {
		t.Fatalf("GBDMPC_LONG_PERIOD: want one duration, got %v", periods)
	}
	period := periods[0]
	deadline := period * 3 / 4
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "pump1", Family: "pumpstation", Period: period, Deadline: deadline,
		MaxAge: period, Spec: solver.Spec{TMin: deadline / 20, TMax: deadline / 5}})
	reg := prometheus.NewRegistry()
	d := startDaemon(t, cfg, controller.Deps{Registry: reg, Logger: zap.NewNop()})
	start := time.Now()
	res, err := RunTestbed(t.Context(), TestbedOptions{BrokerURL: d.info.BrokerURL, PlantID: "pump1", Steps: steps,
		Period: period, Sim: sim.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	misses := testsupport.Counter(t, reg, "gbdmpc_controller_deadline_misses_total", "plant", "pump1")
	solveP50, solveP99 := testsupport.HistQuantiles(t, reg, "gbdmpc_controller_solve_duration_seconds")
	ovP50, ovP99 := testsupport.HistQuantiles(t, reg, "gbdmpc_controller_loop_overhead_seconds")
	hwm, rss := testsupport.ProcStatus("VmHWM"), testsupport.ProcStatus("VmRSS")
	js, _ := json.MarshalIndent(s, "", "  ")
	t.Logf("%d steps of %v (deadline %v) in %v", steps, period, deadline, time.Since(start).Round(time.Second))
	t.Logf("deadline misses %v (%.2f%%), missed periods %d, optimal %d, gap %d, fallbacks %d, violations %d",
		misses, 100*misses/float64(steps), s.MissedPeriods, s.Optimal, s.Gap, s.Fallbacks, s.Violations)
	t.Logf("solve p50 %.1f ms p99 %.1f ms; overhead p50 %.0f µs p99 %.0f µs; round trip p50 %.1f ms p99 %.1f ms",
		solveP50*1e3, solveP99*1e3, ovP50*1e6, ovP99*1e6, s.LatencyP50*1e3, s.LatencyP99*1e3)
	t.Logf("process RSS %s (peak %s) after %d steps — daemon, embedded broker and testbed in one process", rss, hwm, steps)
	t.Logf("summary %s", js)
	d.stop()
}
