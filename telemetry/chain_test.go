package telemetry

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// growingSolve is one solve's master records as the engine logs them: record k holds every cut of
// record k−1 and one more, the first a carried one.
func growingSolve(rng *rand.Rand, solveID, problem string, iters, ny int) []*Record {
	base := masterRecord(rng, 0, ny, iters+1).Master.Cuts
	out := make([]*Record, iters)
	for k := range out {
		r := masterRecord(rng, k, ny, 0)
		r.SolveID, r.Problem = solveID, problem
		for _, c := range base[:k+2] {
			c.Coef = append([]float64(nil), c.Coef...)
			r.Master.Cuts = append(r.Master.Cuts, c)
		}
		out[k] = r
	}
	return out
}

// interleaved is what a daemon with two plants logs: solve a's hard and soft problems and solve b,
// their master records interleaved, each solve closed by its solve record.
func interleaved(iters, ny int) []*Record {
	rng := newRand(21)
	a, soft, b := growingSolve(rng, "a", ProblemHard, iters, ny), growingSolve(rng, "a", ProblemSoft, iters, ny), growingSolve(rng, "b", ProblemHard, iters, ny)
	var out []*Record
	for k := range iters {
		out = append(out, a[k], b[k], soft[k])
	}
	for _, id := range []string{"a", "b"} {
		s := solveRecord(0)
		s.SolveID = id
		out = append(out, s)
	}
	return out
}

// The writer writes a master record as a continuation of its solve's previous one, the reader
// makes it whole again, and each segment reads alone.
func TestChainsRoundTripAndShrink(t *testing.T) {
	recs := interleaved(40, 20)
	dir := t.TempDir()
	l := mustOpen(t, dir, LogOptions{MaxSegmentBytes: 96 << 10}, newFakeClock())
	writeAll(t, l, recs)
	mustClose(t, l)

	got, _ := readAll(t, dir)
	assertRecords(t, got, recs)
	for _, r := range got {
		if r.Master != nil && cap(r.Master.Cuts) != len(r.Master.Cuts) {
			t.Fatalf("a record's cuts have room to grow into the next record's: len %d cap %d", len(r.Master.Cuts), cap(r.Master.Cuts))
		}
	}

	segs := segmentFiles(t, dir)
	if len(segs) < 2 {
		t.Fatalf("%d segments: the test must cross a rotation", len(segs))
	}
	n, written, continued := 0, 0, 0
	for _, name := range segs {
		seg := filepath.Join(dir, name)
		part, _ := readAll(t, seg) // no error: no chain crosses a segment
		n += len(part)
		raw := readFile(t, seg)
		written += len(raw)
		continued += strings.Count(string(raw), `"cuts_from":`)
	}
	if n != len(recs) {
		t.Errorf("segments read alone give %d records, want %d", n, len(recs))
	}
	whole := 0
	for _, r := range recs {
		whole += len(canonical(t, r)) + 1
	}
	t.Logf("%d segments, %d bytes written for %d bytes of whole records; %d continuations", len(segs), written, whole, continued)
	if continued == 0 || 4*written > whole {
		t.Errorf("%d bytes written for %d bytes of whole records (%d continuations): want under a quarter", written, whole, continued)
	}
}

// A continuation whose head is not in its segment is corrupt: the reader says so, or skips it.
func TestChainWithoutItsHead(t *testing.T) {
	head := `{"v":2,"type":"master","solve_id":"s","master":{"ny":1,"cuts":[{"kind":"optimality","coef":[1],"const":0,"iter":0}]}}`
	for _, tc := range []struct{ name, line string }{
		{"no head", `{"v":2,"type":"master","solve_id":"t","master":{"ny":1,"cuts_from":1,"cuts":[]}}`},
		{"short head", `{"v":2,"type":"master","solve_id":"s","master":{"ny":1,"cuts_from":2,"cuts":[]}}`},
		{"version 1", `{"v":1,"type":"master","solve_id":"s","master":{"ny":1,"cuts_from":1,"cuts":[]}}`},
	} {
		path := filepath.Join(t.TempDir(), "log.jsonl")
		writeLines(t, path, head+"\n", tc.line+"\n", line(t, solveRecord(1)))
		got, cerr := readPastCorrupt(t, path)
		if cerr == nil || cerr.Line != 2 || len(got) != 2 {
			t.Errorf("%s: %d records, corrupt %v; want the head, the solve record and line 2 corrupt", tc.name, len(got), cerr)
		}
	}
}

// A record the writer could not write does not leave the next one of its solve continuing it.
func TestChainAfterAFailedWrite(t *testing.T) {
	recs := interleaved(6, 4)
	dir := t.TempDir()
	h := &fileHooks{}
	l := mustOpen(t, dir, LogOptions{openFile: h.opener()}, newFakeClock())
	writeAll(t, l, recs[:7])
	mustSync(t, l)
	h.set(func(h *fileHooks) { h.writeErr = syscall.ENOSPC })
	writeAll(t, l, recs[7:8])
	if err := l.Sync(t.Context()); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Sync = %v, want ENOSPC", err)
	}
	h.set(func(h *fileHooks) { h.writeErr = nil })
	writeAll(t, l, recs[8:])
	mustClose(t, l)
	got, _ := readAll(t, dir)
	assertRecords(t, got, append(recs[:7:7], recs[8:]...))
}

// BenchmarkChainedLog writes one 40-binary solve of 200 iterations, as the pump station of 40
// binaries logs a step, and reports the bytes on disk against the bytes of its whole records.
func BenchmarkChainedLog(b *testing.B) {
	recs := growingSolve(newRand(5), "s", ProblemHard, 200, 40)
	whole := 0
	for _, r := range recs {
		whole += len(canonical(b, r)) + 1
	}
	for b.Loop() {
		dir := b.TempDir()
		l := mustOpen(b, dir, LogOptions{}, newFakeClock())
		writeAll(b, l, recs)
		mustClose(b, l)
		size := 0
		for _, name := range segmentFiles(b, dir) {
			st, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				b.Fatal(err)
			}
			size += int(st.Size())
		}
		b.ReportMetric(float64(size), "bytes/solve")
		b.ReportMetric(float64(whole), "whole-bytes/solve")
	}
}
