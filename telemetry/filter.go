package telemetry

import (
	"errors"
	"io"
	"slices"
	"time"
)

// Filter selects records for offline replay. The zero Filter selects everything.
type Filter struct {
	From, To time.Time // the window [From, To) on ts_ms; a zero bound is open
	Plants   []string  // plant ids; empty means all plants
	Type     string    // TypeMaster or TypeSolve; empty means both
}

// Match reports whether r is selected.
func (f Filter) Match(r *Record) bool {
	if f.Type != "" && r.Type != f.Type {
		return false
	}
	if len(f.Plants) > 0 && !slices.Contains(f.Plants, r.Plant) {
		return false
	}
	t := time.UnixMilli(r.TSms)
	if !f.From.IsZero() && t.Before(f.From) {
		return false
	}
	if !f.To.IsZero() && !t.Before(f.To) {
		return false
	}
	return true
}

// ReadAll reads the remaining records and returns those f selects, in log order. It stops at the
// first error, returning the records read before it.
func (r *Reader) ReadAll(f Filter) ([]*Record, error) {
	var out []*Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if f.Match(rec) {
			out = append(out, rec)
		}
	}
}

// ReadAll reads every record selected by f from paths (directories or segment files).
func ReadAll(f Filter, paths ...string) ([]*Record, error) {
	r, err := NewReader(paths...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadAll(f)
}
