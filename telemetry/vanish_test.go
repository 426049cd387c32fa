package telemetry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSegmentTakenAway: the directory or the active segment is removed, replaced or truncated
// underneath a running writer. The writer notices at the next record, counts one write error,
// writes that record again to a new segment (recreating the directory if needed) and recovers;
// every record it counts as written is on disk at the directory's path, except those the truncation
// itself cut away.
func TestSegmentTakenAway(t *testing.T) {
	cases := []struct {
		name string
		take func(t *testing.T, dir, segment string)
		// onDisk are the indexes of the records readable afterwards; want is what Sync reports.
		onDisk []int
		says   string
	}{
		{"directory removed", func(t *testing.T, dir, _ string) { must(t, os.RemoveAll(dir)) },
			[]int{3, 4, 5}, "removed"},
		{"segment removed", func(t *testing.T, _, seg string) { must(t, os.Remove(seg)) },
			[]int{3, 4, 5}, "removed"},
		{"segment replaced", func(t *testing.T, _, seg string) {
			must(t, os.Remove(seg))
			must(t, os.WriteFile(seg, nil, 0o640))
		}, []int{3, 4, 5}, "replaced"},
		// The truncation loses records 0–2 (the writer cannot help that); record 3 lands in the
		// truncated file, 4 and 5 in a new segment.
		{"segment truncated", func(t *testing.T, _, seg string) { must(t, os.Truncate(seg, 0)) },
			[]int{3, 4, 5}, "truncated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			l := mustOpen(t, dir, LogOptions{}, newFakeClock())
			defer mustClose(t, l)
			recs := variedRecords(38, 6)
			writeAll(t, l, recs[:3])
			mustSync(t, l)
			segs := segmentFiles(t, dir)
			if len(segs) != 1 {
				t.Fatalf("segments %v, want one", segs)
			}
			c.take(t, dir, filepath.Join(dir, segs[0]))

			writeAll(t, l, recs[3:])
			err := l.Sync(t.Context())
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Sync after the segment was taken away: %v, want an error saying %q", err, c.says)
			}
			if got := l.WriteErrors(); got != 1 {
				t.Errorf("WriteErrors() = %d, want 1", got)
			}
			if !l.Healthy() {
				t.Errorf("not healthy after writing to a new segment: %v", l.LastError())
			}
			mustSync(t, l) // the error was reported once
			got, _ := readAll(t, dir)
			var want []*Record
			for _, i := range c.onDisk {
				want = append(want, recs[i])
			}
			assertRecords(t, got, want)
			if n := l.Records(); n != 6 {
				t.Errorf("Records() = %d, want 6 (3 before, 3 after)", n)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
