package telemetry

import (
	"syscall"
	"testing"
)

// TestCounters: the counters the daemon exports as metrics (controller/dlmetrics.go) count
// written, rejected and failed records, rotations and bytes, and Healthy turns false on a failure.
func TestCounters(t *testing.T) {
	h := &fileHooks{}
	l := mustOpen(t, t.TempDir(), LogOptions{MaxSegmentBytes: 1, openFile: h.opener()}, newFakeClock())
	recs := variedRecords(30, 5)
	writeAll(t, l, recs[:3])
	l.Write(&Record{Type: "bogus"})
	mustSync(t, l)
	h.set(func(h *fileHooks) { h.writeErr = syscall.ENOSPC })
	writeAll(t, l, recs[3:4])
	l.Sync(t.Context())

	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"records", l.Records(), 3}, {"dropped", l.Dropped(), 0}, {"write errors", l.WriteErrors(), 1},
		{"rejected", l.Rejected(), 1}, {"rotated", l.Rotated(), 3}, {"queued", uint64(l.Queued()), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if l.Healthy() {
		t.Error("healthy after a failed write")
	}
	if l.Bytes() == 0 {
		t.Error("no bytes counted")
	}
	h.set(func(h *fileHooks) { h.writeErr = nil })
	mustClose(t, l)
}
