package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"

	"gbdmpc/internal/par"
	"gbdmpc/telemetry"
)

// plainSuffix is an uncompressed segment's ending; telemetry may gzip it between listing and
// reading (rotation), and readSegment then follows it to the .gz.
const plainSuffix = ".jsonl"

// segment is what reading one segment file gave.
type segment struct {
	recs          []*telemetry.Record
	torn, skipped int
	err           error
}

// readSegments reads the files in parallel, one telemetry.Reader per file, and returns the segments
// in file order. Decoding JSON is most of a replay's time and segments are independent, so this is
// where parallelism pays; each reader still classifies torn tails and corrupt lines of its file.
func readSegments(ctx context.Context, files []string, strict bool, workers int) ([]segment, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([]segment, len(files))
	err := par.Each(ctx, len(files), workers, func() func(int) {
		return func(i int) { out[i] = readSegment(ctx, files[i], strict) }
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].err != nil {
			return nil, fmt.Errorf("replay: %w", out[i].err)
		}
	}
	return out, nil
}

func readSegment(ctx context.Context, file string, strict bool) segment {
	r, err := telemetry.NewReader(file)
	if errors.Is(err, fs.ErrNotExist) && strings.HasSuffix(file, plainSuffix) {
		r, err = telemetry.NewReader(file + ".gz") // compressed since the directory was listed
	}
	if err != nil {
		return segment{err: err}
	}
	defer r.Close()
	r.SkipCorrupt = !strict
	var s segment
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			s.err = ctx.Err()
			return s
		}
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.err = err
			return s
		}
		s.recs = append(s.recs, rec)
	}
	s.torn, s.skipped = r.Torn(), r.Skipped()
	return s
}
