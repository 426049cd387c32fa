package controller

import (
	"math"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
)

// TestStepMetrics checks the series the alert rules and dashboard in systemd/ rely on: the plant's
// period and deadline from start, the fallback counters at zero before the first fallback (so
// increase() sees it), iterations of every step, and a gap gauge that only certified steps move.
func TestStepMetrics(t *testing.T) {
	testsupport.NoLeaks(t)
	f := newFakeStepper(optimalDecision)
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "p1", Family: "pumpstation", Period: 2 * time.Second, Deadline: 1500 * time.Millisecond, MaxAge: 5 * time.Second})
	d := startDaemon(t, cfg, fakeDeps(f))

	gauge := func(name string) (float64, bool) {
		mfs, err := d.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				for _, m := range mf.GetMetric() {
					return m.GetGauge().GetValue(), true
				}
			}
		}
		return 0, false
	}
	if v, _ := gauge("gbdmpc_controller_period_seconds"); v != 2 {
		t.Errorf("period_seconds = %v, want 2", v)
	}
	if v, _ := gauge("gbdmpc_controller_deadline_seconds"); v != 1.5 {
		t.Errorf("deadline_seconds = %v, want 1.5", v)
	}
	if _, ok := gauge("gbdmpc_controller_certified_gap"); ok {
		t.Error("certified_gap exported before any certified step")
	}
	found := map[string]bool{}
	mfs, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "gbdmpc_controller_fallbacks_total" {
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "kind" {
						found[lp.GetValue()] = true
					}
				}
			}
		}
	}
	if !found["shifted"] || !found["safe"] {
		t.Errorf("fallback series before the first fallback: %v, want shifted and safe at 0", found)
	}

	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	d.expectAction("p1", 1)
	if !d.counterReaches(1, "gbdmpc_controller_gbd_iterations", "plant", "p1") {
		t.Fatal("iterations histogram did not count the step")
	}
	if v, ok := gauge("gbdmpc_controller_certified_gap"); !ok || math.Abs(v-0.0005) > 1e-9 {
		t.Errorf("certified_gap = %v (exported %v), want UBD − LBD = 0.0005", v, ok)
	}

	f.setDecide(fallbackDecision)
	d.publish("p1", pumpMeasurement(2, time.Now(), nil))
	d.expectAction("p1", 2)
	if !d.counterReaches(2, "gbdmpc_controller_gbd_iterations", "plant", "p1") {
		t.Fatal("iterations histogram did not count the fallback step")
	}
	if v, _ := gauge("gbdmpc_controller_certified_gap"); math.Abs(v-0.0005) > 1e-9 {
		t.Errorf("a fallback moved certified_gap to %v", v)
	}
	if got := d.counter("gbdmpc_controller_fallbacks_total", "plant", "p1", "kind", "safe"); got != 1 {
		t.Errorf("fallbacks_total{kind=safe} = %v, want 1", got)
	}
	d.stop()
}
