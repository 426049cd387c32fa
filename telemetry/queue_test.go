package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// stuckLog opens a log in a new directory, with a queue of queue records, whose writes block until
// h.unblock.
func stuckLog(t *testing.T, queue int) (string, *fileHooks, *DecisionLog) {
	dir := t.TempDir()
	h := &fileHooks{}
	h.blockWrites()
	return dir, h, mustOpen(t, dir, LogOptions{QueueSize: queue, openFile: h.opener()}, newFakeClock())
}

// TestQueueFullDrops blocks the writer inside a write, fills the queue, and checks that Write then
// returns false at once and counts the drops.
func TestQueueFullDrops(t *testing.T) {
	dir, h, l := stuckLog(t, 4)
	recs := variedRecords(3, 8)

	if !l.Write(recs[0]) {
		t.Fatal("first Write = false")
	}
	<-h.entered // the writer holds recs[0] and waits; the queue is empty
	for i := 1; i <= 4; i++ {
		if !l.Write(recs[i]) {
			t.Fatalf("Write(%d) = false with room in the queue", i)
		}
	}
	for i := 5; i < 8; i++ {
		if l.Write(recs[i]) {
			t.Fatalf("Write(%d) = true with the queue full", i)
		}
	}
	if got := l.Dropped(); got != 3 {
		t.Errorf("Dropped() = %d, want 3", got)
	}
	h.unblock()
	mustClose(t, l)

	if l.Write(recs[7]) {
		t.Error("Write after Close = true")
	}
	if got := l.Dropped(); got != 4 {
		t.Errorf("Dropped() after a Write on the closed log = %d, want 4", got)
	}
	if err := l.Sync(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Errorf("second Close = %v", err)
	}
	got, _ := readAll(t, dir)
	assertRecords(t, got, recs[:5])
	if l.Records() != 5 {
		t.Errorf("Records() = %d, want 5", l.Records())
	}
}

// TestCloseDeadline checks that Close gives up when its context ends while the writer is stuck, and
// that the writer then drops what is left and exits.
func TestCloseDeadline(t *testing.T) {
	_, h, l := stuckLog(t, 8)
	recs := variedRecords(4, 6)
	writeAll(t, l, recs[:1])
	<-h.entered
	writeAll(t, l, recs[1:])

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with a cancelled context = %v, want context.Canceled", err)
	}
	h.unblock()
	<-l.done
	if got := l.Records() + l.Dropped(); got != 6 {
		t.Errorf("written %d + dropped %d = %d, want 6", l.Records(), l.Dropped(), got)
	}
	if l.Records() < 1 {
		t.Error("the record in progress was not written")
	}
}

// TestCloseStopsGoroutines checks that Close leaves no goroutine behind, maintenance included.
func TestCloseStopsGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	l := mustOpen(t, dir, LogOptions{Compress: true, MaxSegments: 3, MaxSegmentBytes: 1}, newFakeClock())
	writeAll(t, l, variedRecords(5, 10))
	mustClose(t, l)
}

// TestFsyncPolicies counts fsyncs under each policy, with the interval driven by the fake clock.
func TestFsyncPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy FsyncPolicy
		want   int
	}{
		{FsyncNever, 0},
		{FsyncAlways, 4},
		// Records 0 and 1 come within the interval; record 2 comes an interval later and is synced
		// with everything before it; record 3 is synced by Close.
		{FsyncInterval, 2},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			clock := newFakeClock()
			h := &fileHooks{wrote: make(chan struct{}, 4)}
			l := mustOpen(t, t.TempDir(), LogOptions{Fsync: tc.policy, FsyncEvery: time.Hour, openFile: h.opener()}, clock)
			recs := variedRecords(6, 4)
			writeAll(t, l, recs[:2])
			<-h.wrote
			<-h.wrote
			clock.Advance(time.Hour)
			writeAll(t, l, recs[2:])
			mustClose(t, l)
			if _, syncs := h.counts(); syncs != tc.want {
				t.Errorf("%d fsyncs, want %d", syncs, tc.want)
			}
		})
	}
}

func TestSyncForcesFsync(t *testing.T) {
	h := &fileHooks{}
	l := mustOpen(t, t.TempDir(), LogOptions{Fsync: FsyncNever, openFile: h.opener()}, newFakeClock())
	writeAll(t, l, variedRecords(7, 3))
	mustSync(t, l)
	if writes, syncs := h.counts(); writes != 3 || syncs != 1 {
		t.Errorf("after Sync: %d writes, %d fsyncs; want 3 and 1", writes, syncs)
	}
	mustClose(t, l)
}

func TestOptionsValidation(t *testing.T) {
	for _, opt := range []LogOptions{
		{MaxSegmentBytes: -1}, {MaxSegments: -1}, {QueueSize: -1}, {FsyncEvery: -1}, {Fsync: 7},
	} {
		if l, err := Open(t.TempDir(), opt, nil, nil); err == nil {
			l.Close(context.Background())
			t.Errorf("Open(%+v) succeeded", opt)
		}
	}
}
