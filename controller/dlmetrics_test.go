package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"gbdmpc/telemetry"
)

// TestDecisionLogCollector: the collector exports the decision log's eight metrics under their
// documented names with the log's own values, and refuses to be registered twice.
func TestDecisionLogCollector(t *testing.T) {
	l, err := telemetry.Open(t.TempDir(), telemetry.LogOptions{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(t.Context())
	reg := prometheus.NewRegistry()
	if err := registerDecisionLogMetrics(reg, l); err != nil {
		t.Fatal(err)
	}
	if err := registerDecisionLogMetrics(reg, l); err == nil {
		t.Error("registering twice succeeded")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				got[mf.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[mf.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	want := map[string]float64{
		"gbdmpc_decisionlog_records_total": 0, "gbdmpc_decisionlog_dropped_total": 0,
		"gbdmpc_decisionlog_write_errors_total": 0, "gbdmpc_decisionlog_rejected_total": 0,
		"gbdmpc_decisionlog_bytes_total": float64(l.Bytes()), "gbdmpc_decisionlog_segments_rotated_total": 0,
		"gbdmpc_decisionlog_queue_records": 0, "gbdmpc_decisionlog_healthy": 1,
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (exported %v), want %v", name, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("exported %v, want exactly %d metrics", got, len(want))
	}
}
