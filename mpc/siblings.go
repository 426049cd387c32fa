package mpc

import (
	"fmt"
	"sync"
	"time"

	"gbdmpc/gbd"
)

// DefaultSiblingsRefresh is Siblings.Refresh's default.
const DefaultSiblingsRefresh = 100 * time.Millisecond

// Siblings lets the controllers of a daemon's plants lend each other carried cuts. A controller
// with no cut of its own to carry — a plant's first step, every plant's first step after the
// daemon restarts — starts instead from the pooled multipliers of a sibling: a plant of the same
// family whose problems have the same variables and rows. Any multipliers give a valid cut of any
// problem with those rows (gbd.Lagrangian.Cut; weak duality), so a borrowed cut can only make a
// solve start with a higher lower bound, never change what it returns; multipliers of a similar
// plant at a similar hour make the cold step nearly as cheap as a warm one (mpc's
// TestSiblingsWarmAColdStep). The borrowed cuts are carried for that one step; the plant's own
// cuts are pooled as usual and carried from the next step on.
//
// A Siblings is safe for concurrent use by any number of controllers. It keeps the last four
// snapshots of a pool per family, problem shape and kind, at least Refresh apart, and lends their
// entries together: cuts of several plants' problems describe a new plant's far better than one
// plant's (8 first steps of the 12-binary station: 92 GBD iterations cold, 71 borrowing one
// snapshot, 30 borrowing four; a warm step takes 2.5). A snapshot copies a pool's entries, not
// their multipliers, so lending costs the fleet a few microseconds per shape and Refresh.
type Siblings struct {
	// Refresh is how much newer than the newest snapshot a controller's pool must be to be kept
	// as another snapshot (default DefaultSiblingsRefresh).
	Refresh time.Duration

	mu    sync.Mutex
	pools map[siblingKey][]siblingPool // newest last
}

// siblingKey is what makes two problems' multipliers interchangeable: the family, the kind (hard
// or soft, whose rows mean different things: carry.go) and the problem's shape.
type siblingKey struct {
	family        string
	kind          ProblemKind
	nx, ny, m, me int
}

// siblingPool is an immutable snapshot of a pool's entries (their Duals shared, never written).
type siblingPool struct {
	entries []gbd.PooledCut
	at      time.Time
}

// siblingKeep is how many snapshots of one key are kept and lent together.
const siblingKeep = 4

func keyOf(fam Family, kind ProblemKind, p *gbd.Problem) siblingKey {
	return siblingKey{family: fam.Name(), kind: kind, nx: p.NX, ny: p.NY, m: len(p.Ineq), me: len(p.Eq)}
}

// lend returns the entries of k's snapshots as one pool of cuts made at control step `step` (so
// that no alignment shifts them: a sibling's steps count from its own start), or nil when there are
// none.
func (s *Siblings) lend(k siblingKey, step int) *gbd.CutPool {
	s.mu.Lock()
	snaps := s.pools[k]
	s.mu.Unlock()
	n := 0
	for _, sp := range snaps {
		n += len(sp.entries)
	}
	if n == 0 {
		return nil
	}
	pool := gbd.NewCutPool(n)
	for _, sp := range snaps { // oldest first, as a pool keeps them
		for _, e := range sp.entries {
			e.Step, e.Idle = step, 0
			pool.Add(e)
		}
	}
	return pool
}

// offer records pool's entries for k unless the newest snapshot is younger than Refresh.
func (s *Siblings) offer(k siblingKey, pool *gbd.CutPool, now time.Time) {
	if pool.Len() == 0 {
		return
	}
	refresh := s.Refresh
	if refresh <= 0 {
		refresh = DefaultSiblingsRefresh
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	snaps := s.pools[k]
	if len(snaps) > 0 {
		if last := snaps[len(snaps)-1].at; now.Sub(last) < refresh && !now.Before(last) {
			return
		}
	}
	if s.pools == nil {
		s.pools = make(map[siblingKey][]siblingPool)
	}
	// The entries are copied; their multipliers are shared, as a pool never writes them after Add.
	snaps = append(snaps, siblingPool{entries: append([]gbd.PooledCut(nil), pool.Entries()...), at: now})
	if len(snaps) > siblingKeep {
		snaps = append([]siblingPool(nil), snaps[len(snaps)-siblingKeep:]...)
	}
	s.pools[k] = snaps
}

// String describes the snapshots held (for logs and tests).
func (s *Siblings) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, snaps := range s.pools {
		for _, sp := range snaps {
			n += len(sp.entries)
		}
	}
	return fmt.Sprintf("siblings: %d pools, %d cuts", len(s.pools), n)
}
