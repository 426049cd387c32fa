package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gbdmpc/telemetry"
)

// Segment names as telemetry documents them: decisions-<seq>.jsonl, gzipped to .jsonl.gz once
// rotated. Only the listing is repeated here; reading stays telemetry's.
const (
	segmentPrefix = "decisions-"
	plainSuffix   = ".jsonl"
	gzipSuffix    = ".jsonl.gz"
)

// segmentFiles expands directories into their segment files in sequence order, the compressed form
// when a segment has both (the .gz is complete once it exists), as telemetry.NewReader does. Files
// are kept as given.
func segmentFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		type seg struct {
			seq  uint64
			name string
			gz   bool
		}
		bySeq := map[uint64]*seg{}
		for _, e := range entries {
			seq, gz, ok := parseSegment(e.Name())
			if !ok || e.IsDir() {
				continue
			}
			if s, seen := bySeq[seq]; !seen || (gz && !s.gz) {
				bySeq[seq] = &seg{seq: seq, name: e.Name(), gz: gz}
			}
		}
		segs := make([]*seg, 0, len(bySeq))
		for _, s := range bySeq {
			segs = append(segs, s)
		}
		sort.Slice(segs, func(i, j int) bool { return segs[i].seq < segs[j].seq })
		for _, s := range segs {
			out = append(out, filepath.Join(p, s.name))
		}
	}
	return out, nil
}

func parseSegment(name string) (seq uint64, gz, ok bool) {
	rest, found := strings.CutPrefix(name, segmentPrefix)
	if !found {
		return 0, false, false
	}
	switch {
	case strings.HasSuffix(rest, gzipSuffix):
		rest, gz = strings.TrimSuffix(rest, gzipSuffix), true
	case strings.HasSuffix(rest, plainSuffix):
		rest = strings.TrimSuffix(rest, plainSuffix)
	default:
		return 0, false, false
	}
	if rest == "" || strings.TrimLeft(rest, "0123456789") != "" {
		return 0, false, false
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	return seq, gz, err == nil
}

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
	workers = max(1, min(workers, len(files)))
	out := make([]segment, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = readSegment(ctx, files[i], strict)
			}
		}()
	}
	for i := range files {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
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
