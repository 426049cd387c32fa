package telemetry

import (
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := &fileHooks{}
	l := mustOpen(t, t.TempDir(), LogOptions{MaxSegmentBytes: 1, openFile: h.opener()}, newFakeClock())
	if err := l.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if err := l.RegisterMetrics(reg); err == nil {
		t.Error("registering twice succeeded")
	}
	recs := variedRecords(30, 5)
	writeAll(t, l, recs[:3])
	l.Write(&Record{Type: "bogus"})
	mustSync(t, l)
	h.set(func(h *fileHooks) { h.writeErr = syscall.ENOSPC })
	writeAll(t, l, recs[3:4])
	l.Sync(t.Context())

	got := gather(t, reg)
	want := map[string]float64{
		"gbdmpc_decisionlog_records_total":          3,
		"gbdmpc_decisionlog_dropped_total":          0,
		"gbdmpc_decisionlog_write_errors_total":     1,
		"gbdmpc_decisionlog_rejected_total":         1,
		"gbdmpc_decisionlog_bytes_total":            float64(l.Bytes()),
		"gbdmpc_decisionlog_segments_rotated_total": 3,
		"gbdmpc_decisionlog_queue_records":          0,
		"gbdmpc_decisionlog_healthy":                0,
	}
	for name, v := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s not exported", name)
			continue
		}
		if g != v {
			t.Errorf("%s = %v, want %v", name, g, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("exported %v, want exactly %d metrics", got, len(want))
	}
	if l.Bytes() == 0 {
		t.Error("no bytes counted")
	}
	h.set(func(h *fileHooks) { h.writeErr = nil })
	mustClose(t, l)
}

// gather returns each metric's single value by name.
func gather(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				out[mf.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[mf.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
