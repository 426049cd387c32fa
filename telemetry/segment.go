package telemetry

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Segment file names: decisions-<seq>.jsonl while written, decisions-<seq>.jsonl.gz once compressed.
const (
	segmentPrefix = "decisions-"
	plainSuffix   = ".jsonl"
	gzipSuffix    = ".jsonl.gz"
	tmpSuffix     = ".tmp" // a .gz being written; never read, removed by Open
	tornInfix     = ".torn-"
)

func segmentName(seq uint64, compressed bool) string {
	if compressed {
		return fmt.Sprintf("%s%08d%s", segmentPrefix, seq, gzipSuffix)
	}
	return fmt.Sprintf("%s%08d%s", segmentPrefix, seq, plainSuffix)
}

// parseSegmentName returns the sequence number of a segment file name and whether it is compressed.
func parseSegmentName(name string) (seq uint64, compressed, ok bool) {
	rest, found := strings.CutPrefix(name, segmentPrefix)
	if !found {
		return 0, false, false
	}
	switch {
	case strings.HasSuffix(rest, gzipSuffix):
		rest, compressed = strings.TrimSuffix(rest, gzipSuffix), true
	case strings.HasSuffix(rest, plainSuffix):
		rest = strings.TrimSuffix(rest, plainSuffix)
	default:
		return 0, false, false
	}
	if rest == "" || strings.TrimLeft(rest, "0123456789") != "" {
		return 0, false, false
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	if err != nil {
		return 0, false, false
	}
	return seq, compressed, true
}

// segmentSet is what a directory holds of one sequence number. Both forms exist only between the
// rename of a finished .gz and the removal of its source.
type segmentSet struct {
	seq   uint64
	plain bool
	gz    bool
}

// path names the form to read: the .gz when there is one, since it is complete once it exists.
func (s segmentSet) path(dir string) string {
	return filepath.Join(dir, segmentName(s.seq, s.gz))
}

// dirListing is a decision-log directory: its segments in sequence order and the leftovers of an
// interrupted compression.
type dirListing struct {
	segments []segmentSet
	tmp      []string
}

func listDir(dir string) (dirListing, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return dirListing{}, err
	}
	var l dirListing
	bySeq := make(map[uint64]int)
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		if strings.HasPrefix(name, segmentPrefix) && strings.HasSuffix(name, gzipSuffix+tmpSuffix) {
			l.tmp = append(l.tmp, filepath.Join(dir, name))
			continue
		}
		seq, gz, ok := parseSegmentName(name)
		if !ok {
			continue
		}
		i, seen := bySeq[seq]
		if !seen {
			i = len(l.segments)
			bySeq[seq] = i
			l.segments = append(l.segments, segmentSet{seq: seq})
		}
		if gz {
			l.segments[i].gz = true
		} else {
			l.segments[i].plain = true
		}
	}
	slices.SortFunc(l.segments, func(a, b segmentSet) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return l, nil
}

// segmentFile is the part of *os.File the writer uses; tests substitute files that block or fail.
// Stat lets the writer check that the file is still the one at the segment's path.
type segmentFile interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
	Stat() (os.FileInfo, error)
}

// fileOpener opens a segment for appending, creating it if needed, and returns its current size.
type fileOpener func(path string) (f segmentFile, size int64, err error)

func openSegmentFile(path string) (segmentFile, int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// syncDir makes creations, renames and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
