package telemetry

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDiskFullMidRecord fails writes after half a line, as a full disk does, and checks that the
// records are counted as lost, the partial line is cut off, and the log recovers.
func TestDiskFullMidRecord(t *testing.T) {
	for _, truncFails := range []bool{false, true} {
		name := "truncate works"
		if truncFails {
			name = "truncate fails"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			h := &fileHooks{}
			l := mustOpen(t, dir, LogOptions{openFile: h.opener()}, newFakeClock())
			recs := variedRecords(8, 7)
			writeAll(t, l, recs[:3])
			mustSync(t, l)

			h.set(func(h *fileHooks) {
				h.writeErr = syscall.ENOSPC
				if truncFails {
					h.truncErr = syscall.EIO
				}
			})
			writeAll(t, l, recs[3:5])
			if err := l.Sync(t.Context()); !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("Sync during the failure = %v, want ENOSPC", err)
			}
			if got := l.WriteErrors(); got != 2 {
				t.Errorf("WriteErrors() = %d, want 2", got)
			}
			if l.Healthy() || !errors.Is(l.LastError(), syscall.ENOSPC) {
				t.Errorf("Healthy() = %v, LastError() = %v; want false, ENOSPC", l.Healthy(), l.LastError())
			}
			if l.Dropped() != 0 {
				t.Errorf("Dropped() = %d: write errors must be counted apart", l.Dropped())
			}

			h.set(func(h *fileHooks) { h.writeErr, h.truncErr = nil, nil })
			writeAll(t, l, recs[5:])
			mustSync(t, l)
			if !l.Healthy() {
				t.Error("not healthy after a successful write")
			}
			mustClose(t, l)

			got, r := readAll(t, dir)
			assertRecords(t, got, append(recs[:3:3], recs[5:]...))
			if want := b2i(truncFails); r.Torn() != want {
				t.Errorf("Torn() = %d, want %d", r.Torn(), want)
			}
		})
	}
}

// TestUnwritableDirectory takes the directory away — replacing it by a file, which even root
// cannot create files in — and gives it back.
func TestUnwritableDirectory(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "log")
	l := mustOpen(t, dir, LogOptions{MaxSegmentBytes: 1}, newFakeClock()) // a segment per record
	recs := variedRecords(9, 8)
	writeAll(t, l, recs[:3])
	mustSync(t, l)

	away := filepath.Join(base, "away")
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o640); err != nil {
		t.Fatal(err)
	}
	writeAll(t, l, recs[3:5])
	if err := l.Sync(t.Context()); err == nil {
		t.Error("Sync succeeded with the directory gone")
	}
	if got := l.WriteErrors(); got != 2 {
		t.Errorf("WriteErrors() = %d, want 2", got)
	}
	if l.Healthy() || l.LastError() == nil {
		t.Errorf("Healthy() = %v, LastError() = %v", l.Healthy(), l.LastError())
	}

	// Without the file in the way, the writer recreates the directory.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	writeAll(t, l, recs[5:6])
	mustSync(t, l)
	if !l.Healthy() {
		t.Errorf("not healthy after recreating the directory: %v", l.LastError())
	}
	// Give the original back and go on.
	if err := os.Rename(dir, filepath.Join(base, "recreated")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	writeAll(t, l, recs[6:])
	mustClose(t, l)

	got, _ := readAll(t, dir)
	assertRecords(t, got, append(recs[:3:3], recs[6:]...))
	got, _ = readAll(t, filepath.Join(base, "recreated"))
	assertRecords(t, got, recs[5:6])
}

func TestOpenErrorsAreReturned(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "log"), LogOptions{}, nil, nil); err == nil {
		t.Error("Open under a regular file succeeded")
	}
}

// TestFsyncFailureAbandonsSegment: after a failed fsync the kernel may have dropped the data, so the
// writer counts an error and moves to a new segment.
func TestFsyncFailureAbandonsSegment(t *testing.T) {
	dir := t.TempDir()
	h := &fileHooks{}
	l := mustOpen(t, dir, LogOptions{Fsync: FsyncAlways, openFile: h.opener()}, newFakeClock())
	recs := variedRecords(10, 4)
	writeAll(t, l, recs[:1])
	mustSync(t, l)
	h.set(func(h *fileHooks) { h.syncErr = syscall.EIO })
	writeAll(t, l, recs[1:2])
	if err := l.Sync(t.Context()); !errors.Is(err, syscall.EIO) {
		t.Errorf("Sync = %v, want EIO", err)
	}
	h.set(func(h *fileHooks) { h.syncErr = nil })
	writeAll(t, l, recs[2:])
	mustClose(t, l)
	if l.WriteErrors() != 1 || !l.Healthy() {
		t.Errorf("WriteErrors() = %d, Healthy() = %v; want 1, true", l.WriteErrors(), l.Healthy())
	}
	if files := segmentFiles(t, dir); len(files) != 2 {
		t.Errorf("segments %v, want the failed one and a new one", files)
	}
	got, _ := readAll(t, dir)
	assertRecords(t, got, recs) // the data did reach this file system
}
