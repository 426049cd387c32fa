package telemetry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o640); err != nil {
		t.Fatal(err)
	}
}

func line(t *testing.T, r *Record) string { return canonical(t, r) + "\n" }

func TestCorruptMiddleLine(t *testing.T) {
	recs := variedRecords(20, 3)
	for _, bad := range []string{
		"garbage",
		`{"v":1,"type":"master","master":{"ny":0}}`,                                                // ny must be > 0
		`{"v":1,"type":"master","master":{"ny":2,"cuts":[{"kind":"optimality","coef":[1]}]}}`,      // coef length
		`{"v":1,"type":"master","master":{"ny":1,"cuts":[{"kind":"optimality","coef":["+Inf"]}]}}`, // coef not a number
		`{"v":1,"type":"step"}`,
		`{"type":"solve","solve":{}}`, // no version
		"",
	} {
		path := filepath.Join(t.TempDir(), "log.jsonl")
		writeLines(t, path, line(t, recs[0]), line(t, recs[1]), bad+"\n", line(t, recs[2]))

		got, cerr := readPastCorrupt(t, path)
		if cerr == nil || cerr.Line != 3 || cerr.Path != path || !strings.HasPrefix(cerr.Error(), path+":3: ") {
			t.Errorf("%q: error %v, want one naming %s:3", bad, cerr, path)
		}
		assertRecords(t, got, recs)

		r, _ := NewReader(path)
		r.SkipCorrupt = true
		got, err := r.ReadAll(Filter{})
		if err != nil {
			t.Fatalf("%q with SkipCorrupt: %v", bad, err)
		}
		assertRecords(t, got, recs)
		if r.Skipped() != 1 || r.Torn() != 0 {
			t.Errorf("%q: Skipped() = %d, Torn() = %d; want 1, 0", bad, r.Skipped(), r.Torn())
		}
	}
}

func TestVersionError(t *testing.T) {
	recs := variedRecords(21, 2)
	for _, v2 := range []string{
		`{"v":3,"type":"master","ts_ms":1}`,
		`{"v":3,"type":["a","new","shape"]}`, // a later schema need not fit this one
	} {
		path := filepath.Join(t.TempDir(), "log.jsonl")
		writeLines(t, path, line(t, recs[0]), v2+"\n", line(t, recs[1]))
		r, _ := NewReader(path)
		r.SkipCorrupt = true // does not apply to versions
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		_, err := r.Next()
		var verr *VersionError
		if !errors.As(err, &verr) || verr.Version != 3 || verr.Line != 2 ||
			!strings.Contains(err.Error(), "schema version 3") || !strings.Contains(err.Error(), path+":2") {
			t.Errorf("%s: got %v, want a *VersionError for version 3 at %s:2", v2, err, path)
		}
	}
}

func TestTornLineInEverySegment(t *testing.T) {
	recs := variedRecords(22, 6)
	dir := t.TempDir()
	for i := range 3 {
		full := line(t, recs[2*i+1])
		writeLines(t, filepath.Join(dir, segmentName(uint64(i+1), false)), line(t, recs[2*i]), full[:len(full)/2])
	}
	got, r := readAll(t, dir)
	assertRecords(t, got, []*Record{recs[0], recs[2], recs[4]})
	if r.Torn() != 3 {
		t.Errorf("Torn() = %d, want 3", r.Torn())
	}
	// A last line that is complete JSON but lacks its newline is still torn: the writer writes the
	// newline in the same call, so the record was cut.
	path := filepath.Join(t.TempDir(), "x.jsonl")
	writeLines(t, path, line(t, recs[0]), canonical(t, recs[1]))
	got, r = readAll(t, path)
	assertRecords(t, got, recs[:1])
	if r.Torn() != 1 {
		t.Errorf("Torn() = %d, want 1", r.Torn())
	}
}

func TestReaderDirectoryOrder(t *testing.T) {
	recs := variedRecords(23, 4)
	dir := t.TempDir()
	// Sequence numbers past the zero padding still sort numerically.
	writeLines(t, filepath.Join(dir, segmentName(123456789, false)), line(t, recs[3]))
	writeLines(t, filepath.Join(dir, segmentName(10, false)), line(t, recs[2]))
	writeLines(t, filepath.Join(dir, segmentName(2, false)), line(t, recs[0]))
	os.WriteFile(filepath.Join(dir, segmentName(9, true)), gzipBytes(t, []byte(line(t, recs[1]))), 0o640)
	// Neither of these is a segment.
	writeLines(t, filepath.Join(dir, segmentName(2, false)+tornInfix+"1"), "garbage")
	writeLines(t, filepath.Join(dir, "README"), "garbage")
	got, _ := readAll(t, dir)
	assertRecords(t, got, recs)

	// Files are read in the order given, whatever their names.
	got, _ = readAll(t, filepath.Join(dir, segmentName(10, false)), filepath.Join(dir, segmentName(9, true)))
	assertRecords(t, got, []*Record{recs[2], recs[1]})

	if _, err := NewReader(filepath.Join(dir, "missing")); err == nil {
		t.Error("NewReader of a missing path succeeded")
	}
}

func TestMaxLineBytes(t *testing.T) {
	recs := variedRecords(24, 3)
	path := filepath.Join(t.TempDir(), "log.jsonl")
	long := `{"v":1,"type":"solve","solve":{"message":"` + strings.Repeat("x", 200<<10) + `"}}`
	writeLines(t, path, line(t, recs[0]), long+"\n", line(t, recs[1]), line(t, recs[2]))

	r, _ := NewReader(path)
	r.MaxLineBytes = 100 << 10
	r.SkipCorrupt = true
	got, err := r.ReadAll(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	assertRecords(t, got, recs)
	if r.Skipped() != 1 {
		t.Errorf("Skipped() = %d, want 1", r.Skipped())
	}
	// Within the default limit the long line is an ordinary record.
	got, _ = readAll(t, path)
	if len(got) != 4 || len(got[1].Solve.Message) != 200<<10 {
		t.Errorf("read %d records", len(got))
	}
}

func TestFilter(t *testing.T) {
	base := time.UnixMilli(1_772_366_400_000)
	var recs []*Record
	for i := range 12 {
		var r *Record
		if i%4 == 3 {
			r = solveRecord(i)
		} else {
			r = masterRecord(newRand(uint64(i)), i, 3, 2)
		}
		r.TSms = base.Add(time.Duration(i) * time.Second).UnixMilli()
		r.Plant = fmt.Sprintf("p%d", i%3)
		recs = append(recs, r)
	}
	dir := t.TempDir()
	l := mustOpen(t, dir, LogOptions{}, newFakeClock())
	writeAll(t, l, recs)
	mustClose(t, l)

	pick := func(idx ...int) []*Record {
		var out []*Record
		for _, i := range idx {
			out = append(out, recs[i])
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []*Record
	}{
		{"all", Filter{}, recs},
		{"window", Filter{From: base.Add(2 * time.Second), To: base.Add(5 * time.Second)}, pick(2, 3, 4)},
		{"from only", Filter{From: base.Add(10 * time.Second)}, pick(10, 11)},
		{"to is exclusive", Filter{To: base.Add(time.Second)}, pick(0)},
		{"sub-millisecond bound", Filter{From: base.Add(time.Second + time.Microsecond)}, pick(2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{"plants", Filter{Plants: []string{"p0", "p2"}}, pick(0, 2, 3, 5, 6, 8, 9, 11)},
		{"plant and window", Filter{Plants: []string{"p1"}, From: base.Add(4 * time.Second)}, pick(4, 7, 10)},
		{"solves", Filter{Type: TypeSolve}, pick(3, 7, 11)},
		{"nothing", Filter{Plants: []string{"elsewhere"}}, nil},
	} {
		got, err := ReadAll(tc.f, dir)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d records, want %d", tc.name, len(got), len(tc.want))
			continue
		}
		assertRecords(t, got, tc.want)
	}
}

// TestReaderFollowsCompression: a segment compressed between listing and reading is read from its
// .gz.
func TestReaderFollowsCompression(t *testing.T) {
	recs := variedRecords(25, 3)
	dir := t.TempDir()
	plain := filepath.Join(dir, segmentName(1, false))
	writeLines(t, plain, line(t, recs[0]), line(t, recs[1]), line(t, recs[2]))
	r, err := NewReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, segmentName(1, true)), gzipBytes(t, readFile(t, plain)), 0o640)
	os.Remove(plain)
	got, err := r.ReadAll(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	assertRecords(t, got, recs)
}
