package telemetry

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestTruncationRecovery is the crash test: a segment cut at any byte offset must give back exactly
// the records complete before the cut, both to the Reader as it is and after Open has repaired it,
// and appending after the repair must give a valid file.
func TestTruncationRecovery(t *testing.T) {
	const n = 200
	recs := variedRecords(1, n)
	src := t.TempDir()
	l := mustOpen(t, src, LogOptions{Fsync: FsyncNever}, newFakeClock())
	writeAll(t, l, recs)
	mustClose(t, l)
	full := readFile(t, filepath.Join(src, segmentName(1, false)))
	wantAll := canonicals(t, recs)

	// ends[i] is the offset just past record i's newline.
	var ends []int
	for i, b := range full {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) != n {
		t.Fatalf("segment has %d lines, want %d", len(ends), n)
	}

	rng := rand.New(rand.NewPCG(2026, 3))
	offsets := []int{0, 1, len(full) - 1, len(full), ends[0], ends[0] - 1, ends[0] + 1, ends[n/2]}
	for range 100 {
		offsets = append(offsets, rng.IntN(len(full)+1))
	}
	extra := solveRecord(999)
	extraCanon := canonical(t, extra)
	clock := newFakeClock()
	for _, off := range offsets {
		complete, _ := slices.BinarySearch(ends, off+1) // records whose newline is before off
		want := wantAll[:complete]
		torn := complete == 0 && off > 0 || complete > 0 && ends[complete-1] != off

		dir := t.TempDir()
		seg := filepath.Join(dir, segmentName(1, false))
		if err := os.WriteFile(seg, full[:off], 0o640); err != nil {
			t.Fatal(err)
		}

		got, r := readAll(t, dir)
		assertCanonical(t, got, want)
		if wantTorn := b2i(torn); r.Torn() != wantTorn {
			t.Fatalf("offset %d: Torn() = %d, want %d", off, r.Torn(), wantTorn)
		}

		clock.Advance(1)
		l := mustOpen(t, dir, LogOptions{Fsync: FsyncNever}, clock)
		copies, _ := filepath.Glob(seg + tornInfix + "*")
		if torn != (len(copies) == 1) || len(copies) > 1 {
			t.Fatalf("offset %d (torn %v): torn copies %v", off, torn, copies)
		}
		if torn && !bytes.Equal(readFile(t, copies[0]), full[:off]) {
			t.Fatalf("offset %d: the torn copy differs from the segment before repair", off)
		}
		if !l.Write(extra) {
			t.Fatal("Write after repair = false")
		}
		mustClose(t, l)

		got, r = readAll(t, dir)
		assertCanonical(t, got, append(slices.Clone(want), extraCanon))
		if r.Torn() != 0 {
			t.Fatalf("offset %d: the repaired segment still has a torn line", off)
		}
		if files := segmentFiles(t, dir); len(files) != 1 {
			t.Fatalf("offset %d: repair made segments %v, want to append to the one", off, files)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRepairDropsGarbageTail covers what a power loss can leave: complete lines of garbage after the
// last record, and zeros with no newline.
func TestRepairDropsGarbageTail(t *testing.T) {
	recs := variedRecords(5, 6)
	for _, tail := range []string{"\x00\x00\x00\x00", "garbage\n", "{\"v\":1,\n\x00\x00\n", "\n\n"} {
		dir := t.TempDir()
		l := mustOpen(t, dir, LogOptions{}, newFakeClock())
		writeAll(t, l, recs)
		mustClose(t, l)
		seg := filepath.Join(dir, segmentName(1, false))
		good := readFile(t, seg)
		f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(tail)
		f.Close()

		l = mustOpen(t, dir, LogOptions{}, newFakeClock())
		mustClose(t, l)
		if !bytes.Equal(readFile(t, seg), good) {
			t.Errorf("tail %q: repair did not cut back to the last record", tail)
		}
		got, r := readAll(t, dir)
		assertRecords(t, got, recs)
		if r.Torn() != 0 {
			t.Errorf("tail %q: Torn() = %d after repair", tail, r.Torn())
		}
	}
}

func TestValidEndLongLines(t *testing.T) {
	// Lines longer than the backward scan's chunk.
	long := bytes.Repeat([]byte("x"), 3*scanChunk)
	var file []byte
	file = append(file, `{"a":"`...)
	file = append(file, long...)
	file = append(file, "\"}\n"...)
	good := len(file)
	file = append(file, `{"b":"`...)
	file = append(file, long...)
	end, err := validEnd(bytes.NewReader(file), int64(len(file)))
	if err != nil || end != int64(good) {
		t.Fatalf("validEnd = %d, %v, want %d", end, err, good)
	}
}

// TestValidEndManyGarbageLines guards against rescanning: a long tail of short invalid lines must be
// cut in linear time.
func TestValidEndManyGarbageLines(t *testing.T) {
	good := []byte(`{"v":1}` + "\n")
	file := append(slices.Clone(good), bytes.Repeat([]byte("x\n"), 1<<20)...)
	r := &countingReaderAt{r: bytes.NewReader(file)}
	end, err := validEnd(r, int64(len(file)))
	if err != nil || end != int64(len(good)) {
		t.Fatalf("validEnd = %d, %v, want %d", end, err, len(good))
	}
	if r.n > 4*int64(len(file)) {
		t.Errorf("read %d bytes of a %d-byte file", r.n, len(file))
	}
}

type countingReaderAt struct {
	r interface {
		ReadAt(p []byte, off int64) (int, error)
	}
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

func TestRepairIsLogged(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, LogOptions{}, newFakeClock())
	writeAll(t, l, variedRecords(31, 2))
	mustClose(t, l)
	seg := filepath.Join(dir, segmentName(1, false))
	full := readFile(t, seg)
	os.WriteFile(seg, full[:len(full)-5], 0o640)

	core, logs := observer.New(zapcore.WarnLevel)
	l, err := Open(dir, LogOptions{}, zap.New(core).Sugar(), newFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, l)
	entries := logs.FilterMessageSnippet("torn tail").All()
	if len(entries) != 1 {
		t.Fatalf("warnings %v, want one about the torn tail", logs.All())
	}
	if c := entries[0].ContextMap(); c["path"] != seg || c["bytes_cut"] == nil || c["copy"] == "" {
		t.Errorf("warning fields %v", c)
	}
}
