package telemetry

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRotateBySize(t *testing.T) {
	dir := t.TempDir()
	recs := make([]*Record, 20)
	for i := range recs {
		recs[i] = solveRecord(i)
	}
	lineLen := len(canonical(t, recs[0])) + 1
	max := int64(3*lineLen + lineLen/2) // three records fit, a fourth does not
	l := mustOpen(t, dir, LogOptions{MaxSegmentBytes: max}, newFakeClock())
	writeAll(t, l, recs)
	mustClose(t, l)

	files := segmentFiles(t, dir)
	if len(files) != 7 {
		t.Fatalf("segments %v, want 7", files)
	}
	if l.Rotated() != 6 {
		t.Errorf("Rotated() = %d, want 6", l.Rotated())
	}
	for _, f := range files {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > max {
			t.Errorf("%s has %d bytes, more than %d", f, st.Size(), max)
		}
	}
	got, _ := readAll(t, dir)
	assertRecords(t, got, recs)

	// A record larger than the limit gets a segment of its own rather than being refused.
	dir = t.TempDir()
	l = mustOpen(t, dir, LogOptions{MaxSegmentBytes: 10}, newFakeClock())
	writeAll(t, l, recs[:3])
	mustClose(t, l)
	if files := segmentFiles(t, dir); len(files) != 3 {
		t.Errorf("segments %v, want one per oversized record", files)
	}
}

func TestRotateByAge(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	l := mustOpen(t, dir, LogOptions{MaxSegmentAge: time.Hour}, clock)
	recs := variedRecords(11, 4)
	writeAll(t, l, recs[:1])
	mustSync(t, l)
	clock.Advance(59 * time.Minute)
	writeAll(t, l, recs[1:2])
	mustSync(t, l)
	if files := segmentFiles(t, dir); len(files) != 1 {
		t.Fatalf("rotated before the age limit: %v", files)
	}
	clock.Advance(time.Minute)
	writeAll(t, l, recs[2:3])
	mustSync(t, l)
	clock.Advance(3 * time.Hour) // age is checked when a record arrives
	writeAll(t, l, recs[3:])
	mustClose(t, l)
	if files := segmentFiles(t, dir); len(files) != 3 || l.Rotated() != 2 {
		t.Fatalf("segments %v, Rotated() = %d; want 3 segments and 2 rotations", files, l.Rotated())
	}
	got, _ := readAll(t, dir)
	assertRecords(t, got, recs)
}

// TestCompressRotated checks that rotated segments are gzipped, the active one is not, nothing
// temporary is left, and the reader reads across both forms.
func TestCompressRotated(t *testing.T) {
	dir := t.TempDir()
	recs := variedRecords(12, 40)
	l := mustOpen(t, dir, LogOptions{Compress: true, MaxSegmentBytes: 4 << 10}, newFakeClock())
	writeAll(t, l, recs)
	mustClose(t, l)

	files := segmentFiles(t, dir)
	if len(files) < 3 {
		t.Fatalf("only %d segments; the test needs rotations", len(files))
	}
	checkCompressed(t, dir, files, recs)
}

// checkCompressed: every segment but the active (last) one is compressed, no temporary file is
// left, and the log reads back as recs.
func checkCompressed(t *testing.T, dir string, files []string, recs []*Record) {
	t.Helper()
	for i, f := range files {
		if want := i < len(files)-1; strings.HasSuffix(f, gzipSuffix) != want {
			t.Errorf("%s: compressed = %v, want %v", f, !want, want)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*"+tmpSuffix)); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	got, _ := readAll(t, dir)
	assertRecords(t, got, recs)
}

// TestOpenFinishesInterruptedCompression sets up what a crash during compression leaves and checks
// that Open cleans it up without losing a record.
func TestOpenFinishesInterruptedCompression(t *testing.T) {
	dir := t.TempDir()
	recs := variedRecords(13, 12)
	l := mustOpen(t, dir, LogOptions{MaxSegmentBytes: 2 << 10}, newFakeClock())
	writeAll(t, l, recs)
	mustClose(t, l)
	files := segmentFiles(t, dir)
	if len(files) < 4 {
		t.Fatalf("only %d segments", len(files))
	}
	// Segment 1: compressed and renamed, source not yet removed. Segment 2: a half-written .tmp.
	// Segment 3: rotated but never compressed.
	gz1 := gzipBytes(t, readFile(t, filepath.Join(dir, files[0])))
	os.WriteFile(filepath.Join(dir, segmentName(1, true)), gz1, 0o640)
	os.WriteFile(filepath.Join(dir, segmentName(2, true)+tmpSuffix), gz1[:len(gz1)/2], 0o640)

	l = mustOpen(t, dir, LogOptions{Compress: true}, newFakeClock())
	mustClose(t, l)
	after := segmentFiles(t, dir)
	if len(after) != len(files) {
		t.Errorf("segments %v, want one per sequence number of %v", after, files)
	}
	checkCompressed(t, dir, after, recs)
}

func TestRetention(t *testing.T) {
	dir := t.TempDir()
	recs := variedRecords(14, 7)
	l := mustOpen(t, dir, LogOptions{MaxSegments: 2, MaxSegmentBytes: 1, Compress: true}, newFakeClock())
	writeAll(t, l, recs)
	mustClose(t, l)
	files := segmentFiles(t, dir)
	if want := []string{segmentName(6, true), segmentName(7, false)}; !slices.Equal(files, want) {
		t.Fatalf("segments %v, want %v", files, want)
	}
	got, _ := readAll(t, dir)
	assertRecords(t, got, recs[5:])
}

// TestTruncatedGzip cuts a compressed segment that sits between a complete compressed one and a plain
// one: the reader yields every record the damaged stream still decodes, counts it as torn, and goes
// on with the next segment.
func TestTruncatedGzip(t *testing.T) {
	recs := variedRecords(15, 30)
	plain := func(rs []*Record) []byte {
		var b bytes.Buffer
		for _, r := range rs {
			b.WriteString(canonical(t, r))
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
	first, middle, last := plain(recs[:10]), gzipBytes(t, plain(recs[10:20])), plain(recs[20:])
	rng := rand.New(rand.NewPCG(15, 1))
	cuts := []int{0, 1, 2, 10, 11, len(middle) - 8, len(middle) - 1, len(middle)}
	for range 40 {
		cuts = append(cuts, rng.IntN(len(middle)+1))
	}
	for _, cut := range cuts {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, segmentName(1, true)), gzipBytes(t, first), 0o640)
		os.WriteFile(filepath.Join(dir, segmentName(2, true)), middle[:cut], 0o640)
		os.WriteFile(filepath.Join(dir, segmentName(3, false)), last, 0o640)

		complete := completeGzipLines(middle[:cut])
		want := slices.Concat(recs[:10], recs[10:10+complete], recs[20:])
		got, r := readAll(t, dir)
		assertRecords(t, got, want)
		if wantTorn := b2i(cut < len(middle)); r.Torn() != wantTorn {
			t.Errorf("cut at %d of %d: Torn() = %d, want %d", cut, len(middle), r.Torn(), wantTorn)
		}
	}
}

// completeGzipLines counts the complete lines that a cut gzip stream still decodes to.
func completeGzipLines(b []byte) int {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return 0
	}
	data, _ := io.ReadAll(zr)
	return bytes.Count(data, []byte{'\n'})
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestCorruptGzip(t *testing.T) {
	recs := variedRecords(16, 20)
	var b bytes.Buffer
	for _, r := range recs[:10] {
		b.WriteString(canonical(t, r) + "\n")
	}
	gz := gzipBytes(t, b.Bytes())
	gz[len(gz)-6] ^= 0xff // the CRC-32 in the trailer
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, segmentName(1, true)), gz, 0o640)
	l := mustOpen(t, dir, LogOptions{}, newFakeClock())
	writeAll(t, l, recs[10:])
	mustClose(t, l)

	got, corrupt := readPastCorrupt(t, dir)
	if corrupt == nil || !strings.Contains(corrupt.Error(), segmentName(1, true)) {
		t.Fatalf("no corrupt-segment error naming the file: %v", corrupt)
	}
	assertRecords(t, got, recs) // the data came before the bad checksum, and reading went on after it

	r, _ := NewReader(dir)
	r.SkipCorrupt = true
	got, err := r.ReadAll(Filter{})
	if err != nil || len(got) != len(recs) || r.Skipped() != 1 {
		t.Errorf("SkipCorrupt: %d records, Skipped() = %d, err %v", len(got), r.Skipped(), err)
	}
}
