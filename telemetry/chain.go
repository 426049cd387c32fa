package telemetry

import (
	"fmt"
	"slices"
)

// Within one solve the engine only appends cuts, so the master record of iteration k holds every
// cut of iteration k−1's and a few more: written whole, a solve of K iterations logs O(K²) cuts
// (at 40 binaries, gigabytes a simulated day). The writer therefore writes a master record's cuts
// as a continuation of the previous master record of the same solve and problem in the same
// segment: MasterRecord.CutsFrom = n says the first n cuts are that record's, and only the rest
// are on the line. The reader puts them back, so every record a Reader returns is whole. A chain
// never crosses a segment (each segment reads alone, whichever are compressed, deleted by
// retention or read from the middle), and a record that could not be written starts the next
// one of its solve whole.

// chainKey names the master records that continue one another: one solve's, of one problem.
type chainKey struct {
	solveID, problem string
}

// sameCut reports whether two logged cuts are the same, bit for bit.
func sameCut(a, b *CutRecord) bool {
	return a.Kind == b.Kind && a.Const == b.Const && a.Iter == b.Iter && a.Carried == b.Carried && a.Hinges == b.Hinges &&
		slices.Equal(a.Coef, b.Coef)
}

// maxChains bounds the writer's open chains (solves whose solve record has not come yet); past it
// they are all forgotten and the next records are written whole.
const maxChains = 256

// writeChain is what the writer wrote of one chain: its last record's cuts (the writer owns a
// record once it is written), in the segment seq.
type writeChain struct {
	seq  uint64
	cuts []CutRecord
}

// writeChains is the writer goroutine's record of its open chains.
type writeChains map[chainKey]*writeChain

// prefix is how many leading cuts of master record m (of r) the chain's last record in segment
// seq already wrote: 0 when there is no such record or m does not continue it.
func (w writeChains) prefix(r *Record, seq uint64) int {
	c := w[chainKey{r.SolveID, r.Problem}]
	m := r.Master
	if c == nil || c.seq != seq || len(c.cuts) > len(m.Cuts) {
		return 0
	}
	for i := range c.cuts {
		if !sameCut(&c.cuts[i], &m.Cuts[i]) {
			return 0
		}
	}
	return len(c.cuts)
}

// wrote notes that r went into segment seq: a master record extends its chain, a solve record
// closes its solve's chain.
func (w writeChains) wrote(r *Record, seq uint64) {
	key := chainKey{r.SolveID, r.Problem}
	if r.Type != TypeMaster {
		delete(w, key)
		return
	}
	c := w[key]
	if c == nil {
		if len(w) >= maxChains {
			clear(w)
		}
		c = &writeChain{}
		w[key] = c
	}
	c.seq, c.cuts = seq, r.Master.Cuts
}

// continuation is r written as a continuation of its chain's first n cuts: a copy sharing
// everything but the master payload's cut list.
func continuation(r *Record, n int) *Record {
	c, m := *r, *r.Master
	m.Cuts, m.CutsFrom = m.Cuts[n:], n
	c.Master = &m
	return &c
}

// ChainHead readies a chain's table for a record that continues its first n entries and appends
// the rest: table itself when it holds exactly n, so the chain's records share one growing table;
// its first n, copied on the next append, when it holds more (a branch: the records already read
// keep theirs). false when it holds fewer (the chain's earlier records were lost). Records take
// the table capped at their length (slices.Clip), so appending to one cannot reach the next's.
// The decision log's reader and the dataset reader both rebuild their chains with it.
func ChainHead[T any](table []T, n int) ([]T, bool) {
	if n < 0 || len(table) < n {
		return table, false
	}
	if len(table) > n {
		table = slices.Clip(table[:n])
	}
	return table, true
}

// readChains is what one segment's reader has rebuilt of its open chains: each one's cuts in a
// table that grows by appending, which the chain's records share. A record's slice is capped at its
// length, so appending to it cannot reach the cuts of the records after it.
type readChains map[chainKey][]CutRecord

// resolve makes r whole: a master record's cuts get their chain's first CutsFrom in front. It
// fails when the chain holds fewer (its head was lost).
func (rc readChains) resolve(r *Record) error {
	key := chainKey{r.SolveID, r.Problem}
	if r.Type != TypeMaster {
		delete(rc, key)
		return nil
	}
	m := r.Master
	n := m.CutsFrom
	if n == 0 {
		rc[key] = m.Cuts
		m.Cuts = slices.Clip(m.Cuts)
		return nil
	}
	table, ok := ChainHead(rc[key], n)
	if !ok {
		return fmt.Errorf("master record continues %d cuts of its solve's previous record, but this segment holds %d before it", n, len(table))
	}
	table = append(table, m.Cuts...)
	rc[key] = table
	m.Cuts, m.CutsFrom = slices.Clip(table), 0
	return nil
}
