package gbd

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPoolSize is the number of cuts a CutPool keeps when none is given: the last several control
// steps of warm-started solves (a few to a dozen cuts each with strengthened cuts). Each carried
// cut costs every master node, and with strengthened cuts the recent ones carry nearly all the
// bound: `gbdmpc scaling --sizes 12,24,40 --steps 96 --step-deadline 0.8 --carry-pool N`, 64
// against 256 in one run, step p50 7 vs 14 ms (12 binaries), 57 vs 213 ms (24), 40 binaries 91–93
// vs 79 of 96 steps certified (32 and 128 certified 91), the same day's cost at every size.
const DefaultPoolSize = 64

// EnumPoolSize is the carried-cut pool of a plant whose master enumerates Y_pb (gbd/master/enum):
// there a master costs microseconds and an iteration one small NLP, so re-evaluating the carried
// cuts for every step is most of the step, and fewer of them pay: `gbdmpc scaling --steps 96
// --carry-pool N`, 16 against 64 side by side, 12 binaries step p50 4 vs 6 ms (5.0 vs 4.0
// iterations), 24 binaries at 0.8 s 30–32 vs 64–66 ms (11.4 vs 7.6 iterations), every step
// certified and the same day's cost; with the staged master (40 binaries) 16 certified 89–91 steps
// against 64's 92–93, so DefaultPoolSize stays its pool.
const EnumPoolSize = 16

// PooledCut is the record behind one cut of an earlier solve: its multipliers and provenance. The
// cut itself is not stored: it is valid only for the problem it was made from, while the
// multipliers give a valid cut for any later problem with the same rows (Lagrangian.Cut).
type PooledCut struct {
	Kind  CutKind
	Duals CutDuals
	Step  int // control step whose solve produced it
	Iter  int // GBD iteration of that solve
	// Idle counts the consecutive Carry calls in which every cut re-evaluated from this entry was
	// dominated by another carried cut (or could not be made): cuts that changed nothing.
	Idle int
}

// CutPool keeps the multipliers of the most recent cuts of one plant (one pool per receding-
// horizon controller) and re-evaluates them for each new control step's problem, so that GBD
// starts with cuts and its lower bound starts high. It is not safe for concurrent use.
type CutPool struct {
	max     int
	entries []PooledCut // oldest first
}

// NewCutPool returns an empty pool keeping at most max cuts (DefaultPoolSize when max ≤ 0).
func NewCutPool(max int) *CutPool {
	if max <= 0 {
		max = DefaultPoolSize
	}
	return &CutPool{max: max}
}

// Max is the pool's bound.
func (cp *CutPool) Max() int { return cp.max }

// Len is the number of pooled cuts.
func (cp *CutPool) Len() int { return len(cp.entries) }

// Entries are the pooled cuts, oldest first; the slice must not be modified.
func (cp *CutPool) Entries() []PooledCut { return cp.entries }

// Reset empties the pool.
func (cp *CutPool) Reset() { cp.entries = cp.entries[:0] }

// Add pools a copy of pc, dropping the oldest cut when the pool is full.
func (cp *CutPool) Add(pc PooledCut) {
	pc.Duals = pc.Duals.Clone()
	if len(cp.entries) >= cp.max {
		n := copy(cp.entries, cp.entries[len(cp.entries)-cp.max+1:])
		clear(cp.entries[n:])
		cp.entries = cp.entries[:n]
	}
	cp.entries = append(cp.entries, pc)
}

// AddResult pools every cut of r that has multipliers (the cuts r's own subproblems produced,
// not no-good or carried ones) as made at control step `step`, and returns how many it added.
// Cuts of a solve that ended without an incumbent or at a deadline are as valid as any, so every
// result is worth pooling.
func (cp *CutPool) AddResult(step int, r *Result) int {
	if r == nil {
		return 0
	}
	n := 0
	for i, d := range r.Duals {
		if d == nil || i >= len(r.Cuts) {
			continue
		}
		cp.Add(PooledCut{Kind: r.Cuts[i].Kind, Duals: *d, Step: step, Iter: r.Cuts[i].Iter})
		n++
	}
	return n
}

// Aligner maps multipliers made `shift` control steps ago onto the rows of the current problem
// (a receding horizon has moved on by `shift` steps: see mpc.DualShifter). It may return several
// alignments, each carried as its own cut, or none to drop the cut; an alignment may share d's
// slices (Carry only reads them, and not after it returns). Any μ ≥ 0 and λ give a valid
// cut, so alignment decides only how strong the carried cuts are.
type Aligner func(d CutDuals, shift int) []CutDuals

// CarryOptions configure CutPool.Carry. The zero value means the defaults.
type CarryOptions struct {
	// Align maps stored multipliers onto the current rows (nil: used as stored, one cut each).
	Align Aligner
	// Workers bounds the goroutines re-evaluating cuts (default min(GOMAXPROCS, 4)).
	Workers int
	// Deadline, if not zero, ends the re-evaluation: no cut is started at or after it on Clock
	// (default RealClock), so Carry returns at most one cut's re-evaluation after it with the cuts
	// done by then, newest first. Carried cuts make a solve faster, never possible, so the time
	// they may take is best bounded by the caller (mpc gives them a fraction of the step's
	// budget).
	Deadline time.Time
	Clock    Clock
	// Hinges makes the optimality cuts carry the problem's hinges (hinge.go) over the stages
	// HingeStages (Y_pb's): they are re-evaluated with the hinge rows' multipliers at 0, for a
	// master that takes hinges (gbd.HingeTaker), which adds them.
	Hinges      bool
	HingeStages [][]int
	// EvictIdle, if positive, removes from the pool every entry whose re-evaluated cuts were all
	// dominated (or unusable) in EvictIdle consecutive Carry calls. A dominated cut changes neither
	// the master's bound nor the set it excludes, and an entry that keeps being dominated as the
	// horizon moves on rarely comes back: dropping it leaves the pool's room, and the next steps'
	// re-evaluation time, to cuts that shape the master. 0 keeps every entry until it is the oldest
	// of a full pool.
	EvictIdle int
}

// CarryStats says what became of the pooled cuts in one Carry.
type CarryStats struct {
	Pooled     int // cuts in the pool
	Candidates int // aligned multiplier sets re-evaluated (one or more per pooled cut)
	Carried    int // cuts returned
	// Why the others were dropped.
	Misaligned   int // the aligner refused them, or their rows do not fit the problem
	NotSeparable int // a nonlinear term with a non-zero weight couples variables (or is not convex)
	NoMinimum    int // the Lagrangian is unbounded below over X
	NonFinite    int
	Dominated    int // below another carried cut of the same kind at every binary point
	TimedOut     int // not re-evaluated: CarryOptions.Deadline had passed
	Evicted      int // pool entries removed as idle (CarryOptions.EvictIdle)
	// Borrowed counts the carried cuts made from another plant's multipliers (mpc.Siblings)
	// because this plant had none of its own yet; they are among Carried.
	Borrowed int
}

// Carry re-evaluates every pooled cut for p, the problem of control step `step`: the multipliers
// are aligned with o.Align (shift = step − the cut's step), then Lagrangian.Cut turns each
// alignment into a cut of p, which is valid for p whatever the alignment did. Cuts below another
// carried cut everywhere on {0,1}^NY are dropped. The result is newest first, ready for
// Settings.Cuts. Re-evaluation runs on up to o.Workers goroutines (each cut is an independent
// minimization; plant/pumpstation's BenchmarkCarry measures a full pool), and the output does not
// depend on their number unless o.Deadline cuts the re-evaluation short. The error
// is Validate's when p is not a valid Problem.
func (cp *CutPool) Carry(p *Problem, step int, o CarryOptions) ([]Cut, CarryStats, error) {
	st := CarryStats{Pooled: len(cp.entries)}
	if len(cp.entries) == 0 {
		return nil, st, nil
	}
	clock := o.Clock
	if clock == nil {
		clock = RealClock
	}
	timeUp := func() bool { return !o.Deadline.IsZero() && !clock.Now().Before(o.Deadline) }
	if timeUp() {
		st.TimedOut = len(cp.entries)
		return nil, st, nil
	}
	lag, err := NewLagrangian(p)
	if err != nil {
		return nil, st, err
	}
	var hinges *Hinges
	if o.Hinges {
		hinges = FindHinges(p, o.HingeStages)
	}
	type job struct {
		entry int // index in cp.entries
		kind  CutKind
		duals CutDuals
		cut   Cut
		err   error
		done  bool
	}
	jobs := make([]job, 0, len(cp.entries))
	for i := len(cp.entries) - 1; i >= 0; i-- { // newest first
		e := &cp.entries[i]
		if o.Align == nil {
			jobs = append(jobs, job{entry: i, kind: e.Kind, duals: e.Duals})
			continue
		}
		al := o.Align(e.Duals, step-e.Step)
		if len(al) == 0 {
			st.Misaligned++
		}
		for _, d := range al {
			jobs = append(jobs, job{entry: i, kind: e.Kind, duals: d})
		}
	}
	n := len(jobs)
	st.Candidates = n
	if n == 0 {
		return nil, st, nil
	}
	workers := o.Workers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	workers = min(workers, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				if timeUp() {
					return
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				j := &jobs[i]
				d := j.duals
				if hinges != nil && j.kind == OptimalityCut && len(d.Mu) == len(p.Ineq) {
					d.Mu = slices.Clone(d.Mu)
					hinges.zeroRows(d.Mu)
				}
				j.cut, j.err = lag.Strengthened(j.kind, d)
				if j.err == nil && hinges != nil && j.kind == OptimalityCut {
					j.cut.Hinges = hinges
				}
				j.done = true
			}
		})
	}
	wg.Wait()

	cuts := make([]Cut, 0, n)
	from := make([]int, 0, n) // the entry behind each cut
	for i := range jobs {
		j := &jobs[i]
		switch {
		case !j.done:
			st.TimedOut++
		case j.err == nil:
			cuts = append(cuts, j.cut)
			from = append(from, j.entry)
		case errors.Is(j.err, ErrDualsMismatch):
			st.Misaligned++
		case errors.Is(j.err, ErrNotSeparable), errors.Is(j.err, ErrNotConvex):
			st.NotSeparable++
		case errors.Is(j.err, ErrNoMinimum):
			st.NoMinimum++
		default:
			st.NonFinite++
		}
	}
	dropped := dominated(cuts)
	keep := cuts[:0]
	useful := make([]bool, len(cp.entries))
	for i, d := range dropped {
		if d {
			st.Dominated++
			continue
		}
		keep = append(keep, cuts[i])
		useful[from[i]] = true
	}
	cuts = keep
	st.Carried = len(cuts)
	// An entry whose re-evaluation the deadline cut short is not judged; one the aligner refused
	// made nothing and is idle.
	pending := make([]bool, len(cp.entries))
	for i := range jobs {
		if !jobs[i].done {
			pending[jobs[i].entry] = true
		}
	}
	for i := range cp.entries {
		switch {
		case useful[i]:
			cp.entries[i].Idle = 0
		case !pending[i]:
			cp.entries[i].Idle++
		}
	}
	if o.EvictIdle > 0 {
		st.Evicted = cp.evict(o.EvictIdle)
	}
	return cuts, st, nil
}

// evict removes the entries idle in at least `after` consecutive carries, keeping the others'
// order, and returns how many it removed.
func (cp *CutPool) evict(after int) int {
	kept := cp.entries[:0]
	for _, e := range cp.entries {
		if e.Idle < after {
			kept = append(kept, e)
		}
	}
	n := len(cp.entries) - len(kept)
	clear(cp.entries[len(kept):])
	cp.entries = kept
	return n
}

// dropDominated removes every cut that is at or below another cut of the same kind at every
// y ∈ {0,1}^m (for φ_i ≤ φ_j there: Const_i − Const_j + Σ max(0, Coef_i − Coef_j) ≤ 0). Such a cut
// changes neither the master's optimality bound nor the set its feasibility cuts exclude. Of equal
// cuts the first is kept.
//
// A cut can only be below one whose maximum over {0,1}^m is at least its own, so cuts are visited
// in decreasing order of that maximum and each is compared only with the ones before it (and its
// ties); the pairwise test stops as soon as its sum turns positive. The worst case stays O(n²·m).
func dropDominated(cuts []Cut) ([]Cut, int) {
	dropped := dominated(cuts)
	keep := make([]Cut, 0, len(cuts))
	for i := range cuts {
		if !dropped[i] {
			keep = append(keep, cuts[i])
		}
	}
	return keep, len(cuts) - len(keep)
}

// dominated marks the cuts dropDominated drops.
func dominated(cuts []Cut) []bool {
	n := len(cuts)
	dropped := make([]bool, n)
	if n < 2 {
		return dropped
	}
	// The sum only grows, so most pairs are settled after a few terms.
	below := func(a, b *Cut) bool {
		s := a.Const - b.Const
		if s > 0 {
			return false
		}
		for k, v := range a.Coef {
			if d := v - b.Coef[k]; d > 0 {
				if s += d; s > 0 {
					return false
				}
			}
		}
		return true
	}
	hi := make([]float64, n)
	order := make([]int, n)
	for i := range cuts {
		h := cuts[i].Const
		for _, v := range cuts[i].Coef {
			h += max(v, 0)
		}
		hi[i], order[i] = h, i
	}
	sort.SliceStable(order, func(a, b int) bool { return hi[order[a]] > hi[order[b]] })
	// If i is below j then hi_i ≤ hi_j (up to rounding in the two sums): compare i with every cut
	// of at least its maximum less a rounding allowance.
	for a, i := range order {
		tol := 1e-12 * (1 + math.Abs(hi[i]))
		for b, j := range order {
			if b > a && hi[j] < hi[i]-tol {
				break
			}
			if i == j || cuts[i].Kind != cuts[j].Kind || !cuts[i].Hinges.Equal(cuts[j].Hinges) || !below(&cuts[i], &cuts[j]) {
				continue
			}
			if j < i || !below(&cuts[j], &cuts[i]) {
				dropped[i] = true
				break
			}
		}
	}
	return dropped
}
