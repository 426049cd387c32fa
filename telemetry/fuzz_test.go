package telemetry

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the reader, as a plain segment and as a gzipped one, and to
// Open's tail repair. Nothing may panic or loop; every record returned must be valid; under
// SkipCorrupt only a version error may stop the reader; and after repair nothing is torn. The seeds
// in testdata/fuzz/FuzzReader run as ordinary tests.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, gz := range []bool{false, true} {
			for _, skip := range []bool{false, true} {
				fuzzRead(t, data, gz, skip)
			}
		}

		end, err := validEnd(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("validEnd: %v", err)
		}
		if end < 0 || end > int64(len(data)) || end > 0 && data[end-1] != '\n' {
			t.Fatalf("validEnd = %d of %d bytes, not a line end", end, len(data))
		}
		if r := fuzzRead(t, data[:end], false, true); r.Torn() != 0 {
			t.Fatalf("%d torn lines after repair", r.Torn())
		}
	})
}

// fuzzRead reads data from memory as one segment, gzipped when gz is set.
func fuzzRead(t *testing.T, data []byte, gz, skip bool) *Reader {
	name := segmentName(1, gz)
	r := &Reader{
		paths: []string{name},
		open: func(path string) (*lineStream, error) {
			return newLineStream(path, bytes.NewReader(data), nil, gz), nil
		},
		SkipCorrupt: skip,
	}
	defer r.Close()
	r.MaxLineBytes = 1 << 20
	for calls := 0; ; calls++ {
		// A gzipped segment can hold more lines than it has bytes, but deflate expands at most about
		// a thousandfold.
		if calls > 1000+2000*len(data) {
			t.Fatalf("Next did not reach EOF after %d calls", calls)
		}
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r
		}
		var cerr *CorruptError
		var verr *VersionError
		switch {
		case err == nil:
			if verr := rec.Validate(); verr != nil || !knownVersion(rec.V) || rec.Master != nil && rec.Master.CutsFrom != 0 {
				t.Fatalf("Next returned an invalid record (%v): %+v", verr, rec)
			}
		case errors.As(err, &verr):
		case errors.As(err, &cerr):
			if skip {
				t.Fatalf("corrupt error under SkipCorrupt: %v", err)
			}
		default:
			t.Fatalf("unexpected error %T: %v", err, err)
		}
	}
}
