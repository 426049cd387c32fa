package staged

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/internal/scratch"
)

// Master solves the master problem exactly by branch and bound over the stages of Y_pb (the
// move blocks of a receding-horizon plan), for admissible sets too large to enumerate.
//
// Y_pb must be staged (Admissible.Stages): its binaries fall into stages, each with a few binaries,
// and every pure row touches at most three consecutive stages. Then any linear function of y has
// its exact minimum over Y_pb — and over the completions of any partial assignment of the first
// stages — by a dynamic programme whose state is the last two stages' patterns. The bounds of the
// search are such minima, computed backwards once per cut (when it is added). "First", "last" and
// "backwards" here are the search's order of the stages, which is Y_pb's reversed unless Forward
// (Reset reverses the stages; tables of stage cuts are read through tableStages):
//
//   - per cut: φ_k(prefix) + min over completions of φ_k, the largest over the optimality cuts
//     bounds μ_B, and a feasibility cut whose least completion exceeds FeasTol prunes the node;
//   - a problem's hinges (gbd.HingeTaker: exact costs over two consecutive stages, such as
//     starts) add to every cut that carries them a term of the last two patterns, which the DP
//     state holds: the prefix values, the completion tables and the Lagrangian all include it;
//   - Lagrangian: Σ_k λ_k φ_k with λ in the simplex, whose minimum over Y_pb is a lower bound on the
//     master for every such λ and, at its best, the bound over the convex hull of Y_pb (tighter
//     than the LP relaxation of K y ≤ b a MILP solver starts from). λ is chosen at every solve by
//     projected subgradient ascent with Polyak's step, each step one DP; it orders the children.
//
// Nodes cost one addition per cut and child, so the search visits millions of nodes per second. A
// time limit stops it with the incumbent (MasterStopped) as Algorithm 2 needs; its bound is then
// the root's. After each optimum a solution pool (collect) answers the following solves while it
// can, exactly; with the engine's cutoff (Cutoff) the search and the collection are one pass
// (searchCollect), and a pool spent at the cutoff answers MasterAboveCutoff.
type Master struct {
	// Clock times the limit (nil: RealClock).
	Clock gbd.Clock
	// Forward makes the search fix Y_pb's stages first to last. By default it fixes them last to
	// first: in a receding-horizon plan the first blocks are pinned by the measured state and the
	// cuts disagree most about the last ones, so fixing those first lets the per-cut bounds prune
	// near the root. On recorded 40- and 60-binary pump-station cut sets the exact master visits
	// 3 to 50 times fewer nodes last to first (docs/performance.md). The answers are the same.
	Forward bool
	// AscentSteps is the number of subgradient steps choosing λ per solve (0: 60).
	AscentSteps int
	// Budget is the time limit of a classical GBD master step (Budgeted; 0: DefaultBudget,
	// negative: every step exact).
	Budget time.Duration
	// Workers is how many goroutines a search may use (0 or 1: one; AutoWorkers: every processor
	// while no other staged master of the process solves). The answers are the same: the optimum,
	// the pool in the same order, a stopped search's bound from what it left open (parallel.go).
	Workers int
	// MaxPool caps the solution pool (0: 1<<16 assignments, −1: no pool; see collect).
	MaxPool int
	// Nodes, RootBound and Ascent describe the last solve: search nodes visited, the bound before
	// the search (the best of the per-cut and Lagrangian bounds) and the subgradient steps that
	// chose λ (fewer than AscentSteps when the time limit came first).
	Nodes     int
	RootBound float64
	Ascent    int
	// MemoHits is how many of the last solve's nodes a nogood pruned (memo.go), beside Nodes.
	MemoHits int

	ny   int
	rev  [][]int // Y_pb's stages last to first (Forward false)
	sm   *gbd.StageModel
	cuts []stagedCut
	nOpt int

	lam  []float64 // the Lagrangian's weights
	last []int     // last solve's optimum, as stage patterns
	// the order the search evaluates the feasibility and the optimality cuts in
	feasOrder, optOrder []int
	w                   stagedCut // the Lagrangian function of the search
	pre                 []float64 // (stage+1)·len(cuts): φ_k of the prefix at each depth
	preW                []float64
	path                []int // pattern chosen at each stage
	best                []int
	bestVal             float64
	order               [][]int
	keys                [][]float64
	nodes               int
	stopAt              time.Time
	clock               gbd.Clock
	stopped             bool // the time limit ended the search
	done                bool // the incumbent is optimal

	// The solution pool: every admissible y with μ_B(y) ≤ poolT that the feasibility cuts allowed
	// when it was collected, by stage patterns, with its μ_B and feasibility-cut maximum kept up to
	// date as cuts arrive. While poolOK, every y outside it has μ_B > poolT or is excluded.
	pool       []uint16
	poolMu     []float64
	poolViol   []float64
	poolT      float64
	poolOK     bool
	poolUses   int
	delta      float64
	collecting bool
	threshold  float64
	slack      float64 // searchSlack's δ: the collection's threshold is min(threshold, incumbent + slack)
	overflow   bool
	nodeCap    int // the collection's node budget (0: none)
	// searchOn: the collection is also the search (searchCollect); past its budget it drops the
	// pool and goes on as a plain search. openCap bounds what its pruned nodes hide (openBound).
	searchOn  bool
	openCap   float64
	lastNodes int   // nodes of the last solve that searched, the next one's estimate of the work
	pos       []int // the child being explored at each depth of the search
	stopDepth int   // the depth at which the time limit stopped the search
	// cutoff is the engine's UBD − ε (Cutoff); +Inf until an incumbent. A collection up to it
	// keeps the pool valid for the rest of the solve. cutoffTried is cutoff − opt at the last such
	// collection that overflowed: the next is tried once that distance has halved.
	cutoff, cutoffTried float64

	// The cuts' tables again, transposed for the search with the cut index fastest: tv[s][c·stride+k]
	// is cuts[k].val[s][c] and tc[s][ci·stride+k] is cuts[k].comp[s][ci] (ci a class: rowCls), so
	// that a node reads its cuts from one contiguous run (a few kB, in L1) instead of two arrays per
	// cut scattered over the heap.
	tv, tc [][]float64
	stride int
	// The completion tables are kept per class of DP rows: a cut's comp[s] (and tc[s]) holds one
	// value per class, rowCls[s][b·n(s)+c] being the class of the row of patterns b, c at stages
	// s−1, s and nCls[s] their number — the classes of stage s+1's successor table
	// (gbd.StageModel.Classes), one class at the last stage. On the pump stations that is 51
	// values in place of 256 per stage: the DPs take a fifth of the minima and the search's
	// tables a fifth of the cache.
	rowCls [][]int32
	nCls   []int

	// The problem's hinges (TakeHinges): hp[s][b·n(s)+c] is their cost completed by patterns b, c
	// at stages s−1, s (nil: none), and hw[k] the weight cut k gives them (1 if it carries them).
	hs *gbd.Hinges
	hp [][]float64
	hw []float64
	// hpFor and hpSM are the hinges and stage model of the last tables made, hpMade: TakeHinges
	// keeps them while the next solve's are the same (every control step of a plant).
	hpFor  *gbd.Hinges
	hpSM   *gbd.StageModel
	hpMade [][]float64

	// The memo of failed subtrees (memo.go): memo[s][state·memoRing+i] the nogoods of depth s,
	// memoNext[s][state] the slot the next one takes; mg[s] the least prune margin per cut (index
	// K: the Lagrangian) in the subtree of the node being searched at depth s, mgT[s] the cuts it
	// holds; leafs counts the leaves reached (and subtrees handed out), which keep a subtree from
	// becoming a nogood; memoHits counts the nodes a nogood pruned.
	memo     [][]nogood
	memoNext [][]uint8
	mg       [][]float64
	mgT      [][]int
	leafs    int
	memoHits int

	// The k-best mode (kbest > 0, the decoder's candidates): the search keeps the kbest leaves of
	// least μ_B, kpaths their stage patterns and kvals their values, kworst the index of the
	// largest once there are kbest; a node is explored only if it can beat that one.
	kbest  int
	kpaths []uint16
	kvals  []float64
	kworst int

	// The parallel search (parallel.go): the work items handed out at splitDepth, the workers,
	// and, in a worker, what it shares with the others and its index.
	par              *shared
	emitAt           int
	parOpen          float64 // least bound of the nodes a stopped parallel search left open
	items            []item
	itemPre          []float64
	itemPath         []int
	workers          []*Master
	worker, bestItem int
}

// stagedCut is a cut (or the Lagrangian function) by stage: its value on each pattern of each
// stage and its least completion cost from each DP state.
type stagedCut struct {
	kind  gbd.CutKind
	konst float64
	hw    float64     // the weight of the hinges' cost in the cut (Master.hp): 1, 0 or the λ-sum
	val   [][]float64 // [stage][pattern]
	comp  [][]float64 // [stage][class]: min over stages > s given patterns at s−1, s (Master.rowCls)
	root  float64     // minimum over Y_pb
}

// Name implements gbd.Master.
func (m *Master) Name() string { return "staged" }

// TakesStageTables implements gbd.StageTabled: a stage cut's tables add to the stage values.
func (m *Master) TakesStageTables() bool { return true }

// DefaultBudget is Master's default Budget. Measured on 22 fresh 40-binary pump-station
// instances from scratch (half with sustained two-pump demand), side by side: median solve about
// halved against exact steps with budgets of 3–10 ms, every solve certified either way; since the
// search runs on every idle core and its ascent starts warm, 2.5 ms against 5 ms: median 0.196
// against 0.28 s from scratch, and on the 40-binary day at 0.8 s step p50 44–51 against 65 ms
// with 95 of 96 steps certified either way — and on one core 61 against 71 ms, 93 against 92
// certified, well above the 1 ms at which the day fell to 84 (docs/performance.md).
const DefaultBudget = 2500 * time.Microsecond

// StepLimit implements gbd.Budgeted.
func (m *Master) StepLimit() time.Duration {
	if m.Budget == 0 {
		return DefaultBudget
	}
	return m.Budget
}

// Reset implements gbd.Master.
func (m *Master) Reset(ny int, pure []gbd.PureRow, ypb *gbd.Admissible) error {
	if ny <= 0 {
		return fmt.Errorf("staged master: need at least one binary")
	}
	var stages [][]int
	if ypb != nil {
		stages = ypb.Stages
	}
	if stages == nil {
		if ny > gbd.MaxStageBinaries {
			return fmt.Errorf("staged master: Y_pb of %d binaries has no stages", ny)
		}
		all := make([]int, ny)
		for i := range all {
			all[i] = i
		}
		stages = [][]int{all}
	}
	if !m.Forward {
		m.rev = append(m.rev[:0], stages...)
		slices.Reverse(m.rev)
		stages = m.rev
	}
	sm := m.sm
	if !sm.Describes(ny, stages, pure) {
		var err error
		if sm, err = gbd.NewStageModel(ny, stages, pure); err != nil { // it copies the stages
			return fmt.Errorf("staged master: %w", err)
		}
	}
	if sm != m.sm {
		m.setClasses(sm)
	}
	m.ny, m.sm, m.cuts, m.nOpt = ny, sm, m.cuts[:0], 0
	m.hs, m.hp, m.hw = nil, nil, m.hw[:0]
	m.feasOrder, m.optOrder = m.feasOrder[:0], m.optOrder[:0]
	m.stride = 0 // the tables are laid out again for the first cut
	m.lam, m.last = m.lam[:0], m.last[:0]
	m.pool, m.poolMu, m.poolViol, m.poolOK, m.delta = m.pool[:0], m.poolMu[:0], m.poolViol[:0], false, 0
	m.cutoff, m.cutoffTried = math.Inf(1), math.Inf(1)
	return nil
}

// setClasses fills rowCls and nCls from the stage model sm (once per model: Reset keeps a model
// that describes the next step's Y_pb).
func (m *Master) setClasses(sm *gbd.StageModel) {
	S := sm.Stages()
	m.rowCls, m.nCls = scratch.Resize(m.rowCls, S), scratch.Resize(m.nCls, S)
	for s := range S - 1 {
		class, rep := sm.Classes(s + 1)
		m.rowCls[s], m.nCls[s] = class, len(rep)
	}
	last := make([]int32, sm.N(S-2)*sm.N(S-1)) // every row of the last stage completes at 0
	m.rowCls[S-1], m.nCls[S-1] = last, 1
}

// TakeHinges implements gbd.HingeTaker: each hinge's binaries must lie in one stage or two
// consecutive ones, whose DP state the search already holds. It must come before the first cut.
func (m *Master) TakeHinges(h *gbd.Hinges) bool {
	sm := m.sm
	if sm == nil || h == nil || len(m.cuts) > 0 {
		return false
	}
	if m.hpSM == sm && h.Equal(m.hpFor) {
		m.hs, m.hp = h, m.hpMade
		return true
	}
	S := sm.Stages()
	stageOf := make([]int, m.ny)
	for s, vs := range sm.Vars() {
		for _, i := range vs {
			stageOf[i] = s
		}
	}
	hp := make([][]float64, S)
	for s := range S {
		hp[s] = make([]float64, sm.N(s-1)*sm.N(s))
	}
	y := make([]float64, m.ny) // a hinge's binaries set by patterns b, c (the rest do not matter)
	for t := range h.Terms {
		ht := &h.Terms[t]
		lo, hi := S, -1
		for _, i := range ht.Idx {
			if i < 0 || i >= m.ny {
				return false
			}
			lo, hi = min(lo, stageOf[i]), max(hi, stageOf[i])
		}
		if hi < 0 || hi-lo > 1 {
			return false
		}
		nc := sm.N(hi)
		for b := range sm.N(hi - 1) {
			for c := range nc {
				if hi > 0 {
					fillStage(sm, y, hi-1, b)
				}
				fillStage(sm, y, hi, c)
				hp[hi][b*nc+c] += ht.At(y)
			}
		}
	}
	m.hs, m.hp = h, hp
	m.hpFor, m.hpSM, m.hpMade = h, sm, hp
	return true
}

// fillStage writes pattern p of stage s into y's binaries of that stage.
func fillStage(sm *gbd.StageModel, y []float64, s, p int) {
	mask := sm.Patterns(s)[p]
	for j, i := range sm.Vars()[s] {
		y[i] = float64(mask >> j & 1)
	}
}

// hingeRow is the hinges' cost of each pattern of stage s after pattern b of stage s−1 (nil
// without hinges).
func (m *Master) hingeRow(s, b int) []float64 {
	if m.hp == nil {
		return nil
	}
	n := m.sm.N(s)
	return m.hp[s][b*n : (b+1)*n]
}

// hingeAt is the hinges' cost at a full path (stage patterns, as the search or the pool holds it).
func hingeAt[P int | uint16](m *Master, path []P) float64 {
	if m.hp == nil {
		return 0
	}
	v, b := 0.0, 0
	for s, c := range path {
		v += m.hingeRow(s, b)[c]
		b = int(c)
	}
	return v
}

// SetCutoff implements gbd.Cutoff: the pool's next collection reaches up to v when it can hold every
// assignment up to there, so that the solve's remaining masters are answered from it.
func (m *Master) SetCutoff(v float64) {
	if !math.IsNaN(v) {
		m.cutoff = v
	}
}

// setLinear fills sc with the stage values of konst + Σ coef·y (its completion tables are the
// caller's: complete, once the values are final).
func (m *Master) setLinear(sc *stagedCut, konst float64, coef []float64) {
	sm := m.sm
	S := sm.Stages()
	sc.konst = konst
	if len(sc.val) != S {
		sc.val, sc.comp = make([][]float64, S), make([][]float64, S)
	}
	for s, vs := range sm.Vars() {
		sc.val[s] = scratch.Resize(sc.val[s], sm.N(s))
		for i, mask := range sm.Patterns(s) {
			v := 0.0
			for j, y := range vs {
				if mask>>j&1 == 1 {
					v += coef[y]
				}
			}
			sc.val[s][i] = v
		}
	}
}

// complete computes sc.comp and sc.root from sc.val (the backward DP), one value per class of rows
// (rowCls).
func (m *Master) complete(sc *stagedCut) {
	sm := m.sm
	S := sm.Stages()
	for s := S - 1; s >= 0; s-- {
		c := scratch.Resize(sc.comp[s], m.nCls[s])
		if s == S-1 {
			c[0] = 0
			sc.comp[s] = c
			continue
		}
		nc, nd := sm.N(s), sm.N(s+1)
		next, vn, nextCls := sc.comp[s+1], sc.val[s+1], m.rowCls[s+1]
		_, rep := sm.Classes(s + 1)
		for k, ab := range rep {
			b := int(ab) % nc
			row := nextCls[b*nd : (b+1)*nd]
			var hrow []float64
			if sc.hw != 0 {
				hrow = m.hingeRow(s+1, b)
			}
			best := math.Inf(1)
			for _, d := range sm.Successors(s+1, int(ab)) {
				v := vn[d] + next[row[d]]
				if hrow != nil {
					v += sc.hw * hrow[d]
				}
				if v < best {
					best = v
				}
			}
			c[k] = best
		}
		sc.comp[s] = c
	}
	root := math.Inf(1)
	al, n0, cls := sm.Allowed(0), sm.N(0), m.rowCls[0]
	for c := range n0 {
		if al[c] {
			v := sc.val[0][c] + sc.comp[0][cls[c]]
			if hrow := m.hingeRow(0, 0); hrow != nil {
				v += sc.hw * hrow[c]
			}
			root = math.Min(root, v)
		}
	}
	sc.root = sc.konst + root
}

// AddCut implements gbd.Master.
func (m *Master) AddCut(c *gbd.Cut) {
	m.cuts = append(m.cuts, stagedCut{})
	sc := &m.cuts[len(m.cuts)-1]
	sc.kind = c.Kind
	if c.Carries(m.hs) {
		sc.hw = 1
	}
	m.hw = append(m.hw, sc.hw)
	m.setLinear(sc, c.Const, c.Coef)
	if t := c.Tables; t != nil {
		if at, ok := m.tableStages(t); ok {
			for s := range m.sm.Stages() {
				ex := t.Excess[at(s)]
				for i, mask := range m.sm.Patterns(s) {
					sc.val[s][i] += ex[mask]
				}
			}
		}
	}
	m.complete(sc)
	if k := len(m.cuts) - 1; c.Kind == gbd.FeasibilityCut {
		m.feasOrder = append(m.feasOrder, k)
	} else {
		m.optOrder = append(m.optOrder, k)
	}
	m.transpose(len(m.cuts) - 1)
	if c.Kind == gbd.OptimalityCut {
		m.nOpt++
	}
	if !m.poolOK {
		return
	}
	S := m.sm.Stages()
	dst := m.poolMu
	if c.Kind == gbd.FeasibilityCut {
		dst = m.poolViol
	}
	for j := range dst {
		v := sc.konst
		path := m.pool[j*S : (j+1)*S]
		for s, p := range path {
			v += sc.val[s][p]
		}
		if sc.hw != 0 {
			v += sc.hw * hingeAt(m, path)
		}
		if v > dst[j] {
			dst[j] = v
		}
	}
}

// tableStages maps the search's stages to a cut's stage tables (the search may take Y_pb's stages
// last to first): ok is false when the tables are over other stages than Y_pb's.
func (m *Master) tableStages(t *gbd.StageTables) (at func(s int) int, ok bool) {
	vars := m.sm.Vars()
	S := len(vars)
	if len(t.Stages) != S || len(t.Excess) != S {
		return nil, false
	}
	at = func(s int) int { return s }
	if !m.Forward {
		at = func(s int) int { return S - 1 - s }
	}
	for s := range S {
		if !slices.Equal(t.Stages[at(s)], vars[s]) {
			return nil, false
		}
	}
	return at, true
}

// popCut removes the last cut added (the decoder's temporary score cut). The pool, which the cut
// has changed, is given up.
func (m *Master) popCut() {
	k := len(m.cuts) - 1
	if k < 0 {
		return
	}
	order := &m.feasOrder
	if m.cuts[k].kind == gbd.OptimalityCut {
		order = &m.optOrder
		m.nOpt--
	}
	if i := slices.Index(*order, k); i >= 0 {
		*order = slices.Delete(*order, i, i+1)
	}
	m.cuts, m.hw = m.cuts[:k], m.hw[:k]
	m.poolOK = false
}

// transpose writes cut k's tables into tv and tc, laying them out again with twice the stride when
// k does not fit (so a day of carried cuts costs O(total) copying, not O(total) per cut).
func (m *Master) transpose(k int) {
	sm := m.sm
	S := sm.Stages()
	from := k
	if k >= m.stride {
		m.stride = max(64, 2*m.stride, k+1)
		if len(m.tv) != S {
			m.tv, m.tc = make([][]float64, S), make([][]float64, S)
		}
		for s := range S {
			m.tv[s] = scratch.Resize(m.tv[s], sm.N(s)*m.stride)
			m.tc[s] = scratch.Resize(m.tc[s], m.nCls[s]*m.stride)
		}
		from = 0
	}
	st := m.stride
	for j := from; j <= k; j++ {
		sc := &m.cuts[j]
		for s := range S {
			tv, tc := m.tv[s], m.tc[s]
			for c, v := range sc.val[s] {
				tv[c*st+j] = v
			}
			for ci, v := range sc.comp[s] {
				tc[ci*st+j] = v
			}
		}
	}
}

// argmin is the minimiser of sc over Y_pb by the forward pass over its completion tables (nil
// when Y_pb is empty), written into path.
func (m *Master) argmin(sc *stagedCut, path []int) []int {
	sm := m.sm
	S := sm.Stages()
	a, b := 0, 0
	for s := range S {
		nc := sm.N(s)
		best, bi := math.Inf(1), -1
		cls := m.rowCls[s][b*nc : (b+1)*nc]
		var hrow []float64
		if sc.hw != 0 {
			hrow = m.hingeRow(s, b)
		}
		for _, c := range sm.Successors(s, a*sm.N(s-1)+b) {
			v := sc.val[s][c] + sc.comp[s][cls[c]]
			if hrow != nil {
				v += sc.hw * hrow[c]
			}
			if v < best {
				best, bi = v, int(c)
			}
		}
		if bi < 0 {
			return nil
		}
		path[s] = bi
		a, b = b, bi
	}
	return path
}

// valueAt is sc at a full path: konst + Σ_s val[s][path[s]] and its weight of the hinges.
func (m *Master) valueAt(sc *stagedCut, path []int) float64 {
	v := sc.konst
	for s, p := range path {
		v += sc.val[s][p]
	}
	if sc.hw != 0 {
		v += sc.hw * hingeAt(m, path)
	}
	return v
}

// Solve implements gbd.Master.
func (m *Master) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	sm := m.sm
	if sm == nil {
		return gbd.MasterResult{}, fmt.Errorf("staged master: Reset first")
	}
	S, K := sm.Stages(), len(m.cuts)
	m.clock = m.Clock
	if m.clock == nil {
		m.clock = gbd.RealClock
	}
	solving.Add(1)
	defer solving.Add(-1)
	m.stopAt, m.stopped, m.done, m.nodes, m.memoHits = time.Time{}, false, false, 0, 0
	m.parOpen = math.Inf(1)
	if limit > 0 {
		m.stopAt = m.clock.Now().Add(limit)
	}
	m.path = scratch.Resize(m.path, S)
	m.best = scratch.Resize(m.best, S)
	m.pos = scratch.Resize(m.pos, S)
	m.bestVal = math.Inf(1)
	found := false
	floor := math.Inf(-1)
	if m.poolOK && m.nOpt > 0 && m.kbest == 0 {
		if j, mu := m.poolBest(); j >= 0 && mu <= m.poolT+stagedTol(m.poolT) {
			// Every y outside the pool has μ_B > poolT ≥ mu: the pool's best is the optimum.
			m.poolUses++
			for s := range S {
				m.best[s] = int(m.pool[j*S+s])
			}
			m.last = append(m.last[:0], m.best...)
			y := m.yOf(m.best)
			m.Nodes, m.RootBound = 0, mu
			return gbd.MasterResult{Status: gbd.MasterOptimal, Y: y, Mu: mu, Bound: mu}, nil
		}
		floor = m.poolT // the pool is spent: the optimum lies above its threshold
		if floor >= m.cutoff {
			// It was collected up to the cutoff (or beyond): nothing is left at or below it, which
			// certifies the solve without a search for the optimum above it. More cuts only raise
			// μ_B, so the pool stays the proof.
			m.Nodes, m.RootBound = 0, floor
			return gbd.MasterResult{Status: gbd.MasterAboveCutoff, Mu: math.Inf(1), Bound: floor}, nil
		}
		if m.poolUses < poolUsesWanted {
			m.delta *= 2 // spent soon: collect more next time
		}
	}
	m.poolOK = false
	// A feasibility cut that no assignment satisfies, or an empty Y_pb, ends it at once.
	for k := range m.cuts {
		if c := &m.cuts[k]; c.kind == gbd.FeasibilityCut && c.root > gbd.FeasTol || math.IsInf(c.root, 1) {
			return gbd.MasterResult{Status: gbd.MasterInfeasible, Mu: math.Inf(1), Bound: math.Inf(1)}, nil
		}
	}
	// The offered start, and the last solve's optimum (the new cuts usually move the optimum only
	// a little), are the first incumbents.
	// (The k-best mode has no incumbent: every leaf that beats the k-th best so far is kept.)
	var paths [][]int
	if len(start) == m.ny && m.kbest == 0 {
		if p, ok := m.pathOf(start); ok {
			paths = append(paths, p)
		}
	}
	if len(m.last) == S && m.kbest == 0 {
		paths = append(paths, m.last)
	}
	for _, p := range paths {
		if v, feas := m.evaluate(p); feas && v < m.bestVal {
			copy(m.best, p)
			m.bestVal, found = v, true
		}
	}
	bound := floor
	for k := range m.cuts {
		if m.cuts[k].kind == gbd.OptimalityCut {
			bound = math.Max(bound, m.cuts[k].root)
		}
	}
	if m.nOpt > 0 {
		lb, cand := m.ascend(m.bestVal)
		bound = math.Max(bound, lb)
		if cand != nil {
			if v, feas := m.evaluate(cand); feas && v < m.bestVal {
				copy(m.best, cand)
				m.bestVal, found = v, true
			}
		}
	} else {
		// μ_B is unbounded below: any assignment that the feasibility cuts allow is optimal. The
		// search below takes the children in the order of the feasibility cuts' sum, so the first
		// it finds lies deep inside them: GBD's next point is then more likely feasible than the
		// first in pattern order (often all units off, which the next cut only just excludes).
		m.combine(gbd.FeasibilityCut, nil)
	}
	m.RootBound = bound
	defer func() { m.Nodes, m.MemoHits = m.nodes, m.memoHits }()
	m.pre = scratch.Resize(m.pre, (S+1)*K)
	m.preW = scratch.Resize(m.preW, S+1)
	for k := range m.cuts {
		m.pre[k] = m.cuts[k].konst
	}
	m.preW[0] = m.w.konst
	if len(m.order) != S {
		m.order, m.keys = make([][]int, S), make([][]float64, S)
	}
	m.openCap = math.Inf(1)
	collected := false
	if m.kbest > 0 {
		m.nodeCap = kBestNodes
		m.search(0, 0, 0, bound)
		m.nodeCap, m.overflow, m.done = 0, false, false
		found = len(m.kvals) > 0
	} else if c := m.cutoff; found && len(start) == 0 && m.nOpt > 0 && m.MaxPool >= 0 && !math.IsInf(c, 1) && c-m.bestVal < m.cutoffTried/2 {
		// GBD has an incumbent, so only the assignments up to the cutoff matter: one pass finds
		// the optimum among them and collects them all, where a search and then a collection
		// would walk the same tree twice. (Not for a time-limited master that is offered a start,
		// the agent's: there a plain search makes the best use of little time.)
		collected = m.searchCollect(c, cutoffCollectNodes*(4*m.lastNodes+16384))
		m.lastNodes = m.nodes
		if collected {
			m.cutoffTried = math.Inf(1)
		}
		switch {
		case m.stopped:
			// The best leaf so far stands, bounded below by openBound.
		case m.bestVal > c+stagedTol(c):
			// Nothing at or below the cutoff: the nodes the pass pruned hide nothing below it
			// either, so every assignment is above it, which is what the solve needs to know.
			return gbd.MasterResult{Status: gbd.MasterAboveCutoff, Mu: math.Inf(1), Bound: c}, nil
		case !collected:
			m.cutoffTried = c - m.bestVal // the optimum stands; next time only the δ pool
		}
	} else if found && m.bestVal > bound+stagedTol(bound) && m.nOpt > 0 && m.MaxPool >= 0 && (limit == 0 || limit > m.StepLimit()) {
		// An exact master with an incumbent: the search and the pool around its optimum in one
		// pass (searchSlack), where a search and then a collection walk two trees of about the
		// same size.
		kept := m.searchSlack()
		m.lastNodes = m.nodes
		if kept {
			m.cutoffPool(m.bestVal, 4*m.nodes+16384)
			m.stopped = false // the optimum stands; a collection the time limit ended left no pool
		}
		collected = true // the pass made the pool or dropped it: no collection is owed after it
	} else if !found || m.bestVal > bound+stagedTol(bound) || m.nOpt == 0 {
		if m.run(bound) {
			found = true
		}
		m.lastNodes = m.nodes
	}
	if found && !collected && !m.stopped && m.nOpt > 0 && m.MaxPool >= 0 && m.kbest == 0 && m.bestVal < m.cutoff {
		// With the optimum known, collect the pool around it for the next solves (none when the
		// optimum is above the cutoff: it ends the solve).
		m.collect(m.bestVal, 4*m.nodes+16384)
	}
	if !found {
		if m.stopped {
			return gbd.MasterResult{Status: gbd.MasterNoIncumbent, Mu: math.Inf(-1), Bound: bound}, nil
		}
		return gbd.MasterResult{Status: gbd.MasterInfeasible, Mu: math.Inf(1), Bound: math.Inf(1)}, nil
	}
	y := m.yOf(m.best)
	if m.kbest == 0 {
		m.last = append(m.last[:0], m.best...) // the k-best mode leaves the next Solve's incumbent alone
	}
	if m.nOpt == 0 {
		return gbd.MasterResult{Status: gbd.MasterOptimal, Y: y, Mu: math.Inf(-1), Bound: math.Inf(-1)}, nil
	}
	mu := m.maxOpt(m.best)
	if m.stopped {
		return gbd.MasterResult{Status: gbd.MasterStopped, Y: y, Mu: mu, Bound: math.Min(math.Max(bound, m.openBound()), mu)}, nil
	}
	return gbd.MasterResult{Status: gbd.MasterOptimal, Y: y, Mu: mu, Bound: mu}, nil
}

// maxPool is MaxPool or its default.
func (m *Master) maxPool() int {
	if m.MaxPool > 0 {
		return m.MaxPool
	}
	return 1 << 16
}

// poolBest is the pool entry of least μ_B among those the feasibility cuts allow (−1 if none).
func (m *Master) poolBest() (int, float64) {
	best, mu := -1, math.Inf(1)
	for j, v := range m.poolMu {
		if m.poolViol[j] <= gbd.FeasTol && v < mu {
			best, mu = j, v
		}
	}
	return best, mu
}

// collect fills the pool with every admissible y of μ_B ≤ T = min(opt + δ, cutoff), opt the
// optimum just found; the next solves update the pool instead of searching while its best stays
// within T (GBD's master optimum rises by small steps). The collection may visit at most maxNodes
// nodes more and the time limit's rest; beyond either, or beyond MaxPool assignments, it is
// dropped and δ halves. With a cutoff (SetCutoff) above T it first tries T = cutoff with
// cutoffCollectNodes times the nodes. It leaves m.best and m.bestVal as they were.
func (m *Master) collect(opt float64, maxNodes int) {
	if m.delta <= 0 {
		m.delta = 0.01 * (1 + math.Abs(opt))
	}
	if m.cutoffPool(opt, maxNodes) || m.stopped {
		m.stopped = false // the optimum stands; no time for a pool
		return
	}
	best, bestVal := slices.Clone(m.best), m.bestVal
	defer func() { copy(m.best, best); m.bestVal = bestVal }()
	// Never beyond the cutoff: what lies above it is never asked for (MasterAboveCutoff).
	if !m.gather(min(opt+m.delta, m.cutoff), maxNodes) {
		m.stopped = false // the optimum stands; only the pool is lost
		m.delta /= 2
	}
}

// cutoffPool collects the pool up to the cutoff when it is above opt + δ and not known to be out
// of reach (every later master of the solve is then answered from it: Cutoff), and reports whether
// it did; m.stopped then says whether the time limit ended the try. It leaves m.best and m.bestVal
// as they were.
func (m *Master) cutoffPool(opt float64, maxNodes int) bool {
	c := m.cutoff
	if math.IsInf(c, 1) || c <= opt+m.delta || c-opt >= m.cutoffTried/2 {
		return false
	}
	best, bestVal := slices.Clone(m.best), m.bestVal
	defer func() { copy(m.best, best); m.bestVal = bestVal }()
	if m.gather(c, cutoffCollectNodes*maxNodes) {
		m.cutoffTried = math.Inf(1)
		return true
	}
	if !m.stopped {
		m.cutoffTried = c - opt
	}
	return false
}

// searchSlack is the search and the collection of the pool around its optimum in one pass: every
// leaf within δ of the incumbent is collected and the nodes are pruned at min(incumbent + δ,
// cutoff), which falls with the incumbent, so that at the end the pool holds every admissible y
// of μ_B ≤ min(opt + δ, cutoff) (and some above, dropped). It reports whether the pool was kept:
// past its node budget or MaxPool it is dropped and δ halves, the pass going on as a plain search.
func (m *Master) searchSlack() bool {
	if m.delta <= 0 {
		m.delta = 0.01 * (1 + math.Abs(m.bestVal))
	}
	m.slack = m.delta
	defer func() { m.slack = 0 }()
	if !m.pass(m.cutoff, math.MaxInt/2, true) {
		if !m.stopped {
			m.delta /= 2
		}
		return false
	}
	// Keep what lies within δ of the optimum found (the pool's order stays the search's).
	t := min(m.cutoff, m.bestVal+m.slack)
	S, n := m.sm.Stages(), 0
	for j, mu := range m.poolMu {
		if mu <= t {
			copy(m.pool[n*S:(n+1)*S], m.pool[j*S:(j+1)*S])
			m.poolMu[n], m.poolViol[n] = mu, m.poolViol[j]
			n++
		}
	}
	m.pool, m.poolMu, m.poolViol = m.pool[:n*S], m.poolMu[:n], m.poolViol[:n]
	m.poolT = t
	if j, _ := m.poolBest(); j < 0 {
		m.poolOK = false
	}
	return true
}

// poolUsesWanted is how many master answers a pool should give before it is spent: one spent
// sooner doubles δ for the next. In GBD's tail on the 40-binary station a search costs millions of
// nodes and a pool within the first δ held tens of assignments, a few answers; the pool is never
// collected beyond the cutoff, and δ halves when a collection overflows.
const poolUsesWanted = 8

// cutoffCollectNodes is how many times the usual node budget a collection up to the cutoff may use:
// it replaces the searches of every master left in the solve.
const cutoffCollectNodes = 4

// gather fills the pool with every admissible y of μ_B ≤ t within maxNodes more nodes, MaxPool
// assignments and the time limit, and reports whether it did (false: the pool is empty and invalid,
// m.stopped says whether the time limit ended it).
func (m *Master) gather(t float64, maxNodes int) bool { return m.pass(t, maxNodes, false) }

// searchCollect is the search and the collection up to t in one pass: it finds the optimum when
// it is at or below t (in m.best) and fills the pool with every admissible y of μ_B ≤ t. Beyond
// maxNodes nodes or MaxPool assignments it drops the pool and goes on as a plain search; it then
// reports false, as it does when the time limit stops it. Its pruned nodes have bounds above t, so
// when the optimum is above t all that is known of it is that (m.bestVal > t on return).
func (m *Master) searchCollect(t float64, maxNodes int) bool {
	return m.pass(t, maxNodes, true)
}

// pass is gather and searchCollect: one walk of the tree that collects every leaf up to t, either
// as a collection only (it stops at its budget) or as the search too (searchOn: past its budget it
// drops the pool and searches on; a stop leaves openBound capped at t).
func (m *Master) pass(t float64, maxNodes int, searchOn bool) bool {
	// The pool is rebuilt from nothing: until the pass ends whole, it proves nothing (a pool
	// from the pass before, emptied here, must not answer the next solve as spent).
	m.pool, m.poolMu, m.poolViol, m.poolOK = m.pool[:0], m.poolMu[:0], m.poolViol[:0], false
	m.collecting, m.searchOn, m.threshold, m.overflow, m.done = true, searchOn, t, false, false
	m.nodeCap = m.nodes + maxNodes
	if searchOn {
		m.openCap = t
	}
	m.run(math.Inf(-1))
	ok := m.collecting && !m.overflow && !m.stopped
	m.collecting, m.searchOn, m.nodeCap, m.overflow, m.done = false, false, 0, false, false
	if !ok {
		m.pool, m.poolMu, m.poolViol = m.pool[:0], m.poolMu[:0], m.poolViol[:0]
		return false
	}
	m.openCap = math.Inf(1)
	if j, _ := m.poolBest(); j >= 0 {
		m.poolOK, m.poolT, m.poolUses = true, t, 1
	}
	return true
}

// dropCollection ends a searchCollect's collection: the pool is lost and the pass goes on as a
// plain search, whose nodes must beat the incumbent (its pruned nodes still hide only values
// above the collection's threshold, openCap).
func (m *Master) dropCollection() {
	m.leafs++ // the cutoff may rise: the subtrees open now must not become nogoods
	if m.par != nil {
		m.par.dropped.Store(true) // the other workers' pools go with it
	}
	m.collecting, m.nodeCap = false, 0
	m.pool, m.poolMu, m.poolViol = m.pool[:0], m.poolMu[:0], m.poolViol[:0]
}

// cutoff is the value a node's bound must stay below to be explored: the incumbent's μ_B less
// stagedTol (+Inf without an incumbent).
func cutoff(best float64) float64 {
	if math.IsInf(best, 1) {
		return best
	}
	return best - stagedTol(best)
}

// stagedTol is how much below the incumbent a node's bound must be to be explored: the bounds and
// the incumbent are sums of the same numbers in other orders.
func stagedTol(v float64) float64 { return 1e-12 * (1 + math.Abs(v)) }

// searchNode is the depth-first branch and bound over stage s given patterns a (s−2) and b (s−1),
// its children searched through search (the memo, memo.go). It returns whether it improved the
// incumbent. floor is a global lower bound: an incumbent within tolerance of it is optimal and
// ends the search (m.done), as does the first feasible leaf when there is no optimality cut.
func (m *Master) searchNode(s, a, b int, floor float64) bool {
	sm := m.sm
	S, K := sm.Stages(), len(m.cuts)
	nc := sm.N(s)
	pre, next := m.pre[s*K:(s+1)*K], m.pre[(s+1)*K:(s+2)*K]
	// Children in the order of the Lagrangian's least completion.
	ord, keys := m.order[s][:0], m.keys[s][:0]
	wv, wc, cls := m.w.val[s], m.w.comp[s], m.rowCls[s][b*nc:(b+1)*nc]
	// hrow: the hinges' cost of each child here (the same for every cut that carries them).
	hrow := m.hingeRow(s, b)
	for _, c := range sm.Successors(s, a*sm.N(s-1)+b) {
		ord = append(ord, int(c))
		key := m.preW[s] + wv[c] + wc[cls[c]]
		if hrow != nil {
			key += m.w.hw * hrow[c]
		}
		keys = append(keys, key)
	}
	m.order[s], m.keys[s] = ord, keys
	sortByKey(ord, keys)
	improved := false
	for i, c := range ord {
		if m.halted() {
			return improved
		}
		m.nodes++
		if m.nodeCap > 0 && m.overCap() {
			if !m.searchOn {
				m.overflow, m.done = true, true
				m.halt()
				return improved
			}
			m.dropCollection()
		}
		if m.nodes&1023 == 0 && !m.stopAt.IsZero() && !m.clock.Now().Before(m.stopAt) {
			m.stopped = true
			m.stopDepth, m.pos[s] = s, i-1 // children i.. of this depth are still open
			m.halt()
			return improved
		}
		m.pos[s] = i
		cut := m.curCut()
		if m.kbest > 0 {
			cut = m.kCutoff()
		}
		if m.nOpt > 0 && keys[i] >= cut {
			if m.kbest == 0 {
				m.record(s, K, keys[i]-cut)
			}
			break // sorted: no later child has a lower Lagrangian bound
		}
		lb, ok := math.Inf(-1), true
		ci := int(cls[c])
		tv := m.tv[s][c*m.stride : c*m.stride+K]
		tc := m.tc[s][ci*m.stride : ci*m.stride+K]
		// The feasibility cuts, then the optimality cuts, each in the order of their last
		// prunings: the cut that pruned a node tends to prune its siblings, and a pruned child
		// needs no more cuts evaluated. Which cut prunes does not change what is pruned.
		for i, k := range m.feasOrder {
			v := pre[k] + tv[k]
			next[k] = v
			if v+tc[k] > gbd.FeasTol {
				if m.kbest == 0 {
					m.record(s, k, v+tc[k]-gbd.FeasTol)
				}
				ok = false
				m.feasOrder[i], m.feasOrder[0] = m.feasOrder[0], k
				break
			}
		}
		if ok {
			// h is the hinges' cost of this child, hw[k] the weight cut k gives it (0 without).
			h, hw := 0.0, m.hw[:K]
			if hrow != nil {
				h = hrow[c]
			}
			for i, k := range m.optOrder {
				v := pre[k] + tv[k] + h*hw[k]
				next[k] = v
				if low := v + tc[k]; low > lb {
					lb = low
					if lb >= cut {
						if m.kbest == 0 {
							m.record(s, k, lb-cut)
						}
						ok = false
						m.optOrder[i], m.optOrder[0] = m.optOrder[0], k
						break
					}
				}
			}
		}
		if !ok {
			continue
		}
		m.path[s] = c
		if s < S-1 {
			m.preW[s+1] = m.preW[s] + m.w.val[s][c]
			if hrow != nil {
				m.preW[s+1] += m.w.hw * hrow[c]
			}
			if s+1 == m.emitAt {
				m.emit(s+1, b, c, keys[i])
				continue
			}
			if m.search(s+1, b, c, floor) {
				improved = true
			}
			continue
		}
		// A leaf: every completion term is zero, so lb is μ_B here and the feasibility cuts hold.
		m.leafs++
		if m.collecting && m.poolFull() {
			if !m.searchOn {
				m.overflow, m.done = true, true
				m.halt()
				return improved
			}
			m.dropCollection()
			if lb >= cutoff(m.incumbent()) {
				continue
			}
		}
		if m.collecting {
			viol := math.Inf(-1)
			for k := range m.cuts {
				if m.cuts[k].kind == gbd.FeasibilityCut {
					viol = math.Max(viol, next[k])
				}
			}
			for _, p := range m.path {
				m.pool = append(m.pool, uint16(p))
			}
			m.poolMu, m.poolViol = append(m.poolMu, lb), append(m.poolViol, viol)
			if lb < m.bestVal {
				m.improve(lb)
				improved = true
			}
			continue
		}
		if m.kbest > 0 {
			m.keep(lb)
			if lb < m.bestVal {
				copy(m.best, m.path)
				m.bestVal, improved = lb, true
			}
			continue
		}
		m.improve(lb)
		improved = true
		if m.nOpt == 0 || lb <= floor+stagedTol(floor) {
			m.done = true
			m.halt()
		}
	}
	return improved
}

// kCutoff is the value a node's bound must stay below in the k-best mode: +Inf until kbest leaves
// are kept, then the worst of them less stagedTol.
func (m *Master) kCutoff() float64 {
	if len(m.kvals) < m.kbest {
		return math.Inf(1)
	}
	return cutoff(m.kvals[m.kworst])
}

// keep adds the current path, of value v, to the k best (replacing the worst when there are
// kbest already; the search only reaches leaves that beat it).
func (m *Master) keep(v float64) {
	S := len(m.path)
	j := len(m.kvals)
	if j < m.kbest {
		m.kvals = append(m.kvals, v)
		m.kpaths = append(m.kpaths, make([]uint16, S)...)
	} else {
		j = m.kworst
		m.kvals[j] = v
	}
	for s, p := range m.path {
		m.kpaths[j*S+s] = uint16(p)
	}
	if len(m.kvals) == m.kbest {
		m.kworst = 0
		for i, x := range m.kvals {
			if x > m.kvals[m.kworst] {
				m.kworst = i
			}
		}
	}
}

// kBestNodes caps the nodes of a k-best search: past it, the leaves kept so far are the answer
// (all admissible and allowed by the feasibility cuts, but perhaps not the k best).
const kBestNodes = 1 << 20

// SolveK finds the k admissible assignments of least μ_B that the feasibility cuts allow (fewer
// when there are fewer), written as rows of ys (k·NY, reallocated if short) in ascending μ_B; it
// returns ys and how many. The pool is neither used nor kept, and the incumbent of the next Solve
// is not changed.
func (m *Master) SolveK(k int, ys []float64) ([]float64, int, error) {
	if m.sm == nil {
		return ys, 0, fmt.Errorf("staged master: Reset first")
	}
	if k <= 0 {
		return ys, 0, fmt.Errorf("staged master: %d candidates asked for", k)
	}
	m.kbest, m.kpaths, m.kvals, m.kworst = k, m.kpaths[:0], m.kvals[:0], 0
	_, err := m.Solve(0, nil)
	m.kbest = 0
	if err != nil {
		return ys, 0, err
	}
	n := len(m.kvals)
	S := m.sm.Stages()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(m.kvals[a], m.kvals[b]) })
	ys = scratch.Resize(ys, n*m.ny)
	for r, i := range idx {
		fillY(m.sm, ys[r*m.ny:(r+1)*m.ny], m.kpaths[i*S:(i+1)*S])
	}
	return ys, n, nil
}

// openBound is, after the time limit stopped the search, the least Lagrangian bound of the nodes
// it left open (the unexplored children along the path to where it stopped; each depth's keys are
// sorted, so its next one is its least) and of the incumbent: a lower bound on the master optimum.
func (m *Master) openBound() float64 {
	lb := math.Min(math.Min(m.bestVal, m.openCap), m.parOpen)
	for d := 0; d <= m.stopDepth && d < len(m.keys); d++ {
		if j := m.pos[d] + 1; j < len(m.keys[d]) {
			lb = math.Min(lb, m.keys[d][j])
		}
	}
	return lb
}

// sortByKey sorts idx by keys ascending (insertion sort: a stage has a few dozen patterns).
func sortByKey(idx []int, keys []float64) {
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

// ascend chooses λ (the feasibility cuts stay out of it: they prune by their own completion tables) by
// projected subgradient ascent on the Lagrangian dual max_λ min_{y∈Y_pb} Σ λ_k φ_k(y), from the
// best single cut's vertex, with Polyak's step towards target (the incumbent's μ_B, or above the
// best cut's minimum when there is none). It leaves the best λ in m.w and returns its bound and
// the last minimiser (a candidate incumbent).
func (m *Master) ascend(target float64) (float64, []int) {
	K := len(m.cuts)
	steps := m.AscentSteps
	if steps <= 0 {
		steps = 60
	}
	// The last solve's λ, with weight 0 on the cuts added since, starts a warm ascent of fewer steps.
	prev := min(len(m.lam), K)
	warm := 0.0
	for k := range prev {
		if m.cuts[k].kind == gbd.OptimalityCut {
			warm += m.lam[k]
		}
	}
	if cap(m.lam) < K {
		m.lam = append(make([]float64, 0, 2*K), m.lam[:prev]...)
	}
	m.lam = m.lam[:K]
	top := -1
	for k := range m.cuts {
		if k >= prev || warm <= 0 || m.cuts[k].kind != gbd.OptimalityCut {
			m.lam[k] = 0
		}
		if m.cuts[k].kind == gbd.OptimalityCut && (top < 0 || m.cuts[k].root > m.cuts[top].root) {
			top = k
		}
	}
	best := m.cuts[top].root
	bestLam := make([]float64, K)
	bestLam[top] = 1
	if warm > 0 {
		for k := range prev {
			m.lam[k] /= warm
		}
		steps = max(1, steps/warmAscentShare)
	} else {
		copy(m.lam, bestLam)
	}
	if math.IsInf(target, 1) || target <= best {
		target = best + 0.1*(1+math.Abs(best))
	}
	path := make([]int, m.sm.Stages())
	var cand []int
	d := make([]float64, K)
	m.Ascent = 0
	for range steps {
		if m.Ascent > 0 && !m.stopAt.IsZero() && !m.clock.Now().Before(m.stopAt) {
			break // the time limit holds for the bound's preparation too: the best λ so far stands
		}
		m.Ascent++
		m.combine(gbd.OptimalityCut, m.lam)
		p := m.argmin(&m.w, path)
		if p == nil {
			break
		}
		g := m.valueAt(&m.w, p)
		if g > best {
			best = g
			copy(bestLam, m.lam)
		}
		cand = p
		// Subgradient φ(y*) on the optimality cuts, projected on the simplex's tangent space.
		mean := 0.0
		for k := range m.cuts {
			if m.cuts[k].kind == gbd.OptimalityCut {
				d[k] = m.valueAt(&m.cuts[k], p)
				mean += d[k]
			}
		}
		mean /= float64(m.nOpt)
		norm := 0.0
		for k := range m.cuts {
			if m.cuts[k].kind == gbd.OptimalityCut {
				d[k] -= mean
				norm += d[k] * d[k]
			}
		}
		if norm == 0 || target-g <= 0 {
			break
		}
		step := (target - g) / norm
		for k := range m.cuts {
			if m.cuts[k].kind == gbd.OptimalityCut {
				m.lam[k] += step * d[k]
			}
		}
		projectSimplex(m.lam, m.cuts)
	}
	copy(m.lam, bestLam)
	m.combine(gbd.OptimalityCut, m.lam)
	return best, cand
}

// warmAscentShare divides the ascent's steps when it starts from the last solve's λ.
const warmAscentShare = 3

// projectSimplex projects the optimality cuts' weights onto the probability simplex (Euclidean,
// by the sorted-threshold rule); the feasibility cuts' weights stay 0.
func projectSimplex(lam []float64, cuts []stagedCut) {
	var v []float64
	for k := range cuts {
		if cuts[k].kind == gbd.OptimalityCut {
			v = append(v, lam[k])
		}
	}
	slices.SortFunc(v, func(a, b float64) int { return cmp.Compare(b, a) })
	sum, theta := 0.0, 0.0
	for i, x := range v {
		sum += x
		if t := (sum - 1) / float64(i+1); x-t > 0 {
			theta = t
		}
	}
	for k := range cuts {
		if cuts[k].kind == gbd.OptimalityCut {
			lam[k] = math.Max(0, lam[k]-theta)
		}
	}
}

// combine sets m.w to Σ λ_k φ_k over the cuts of one kind (λ nil: every weight 1) by stage values
// and recomputes its tables.
func (m *Master) combine(kind gbd.CutKind, lam []float64) {
	sm := m.sm
	S := sm.Stages()
	w := &m.w
	if len(w.val) != S {
		w.val, w.comp = make([][]float64, S), make([][]float64, S)
	}
	w.konst, w.hw = 0, 0
	for s := range S {
		w.val[s] = scratch.Resize(w.val[s], sm.N(s))
		for i := range w.val[s] {
			w.val[s][i] = 0
		}
	}
	for k := range m.cuts {
		c := &m.cuts[k]
		wt := 1.0
		if lam != nil {
			wt = lam[k]
		}
		if wt == 0 || c.kind != kind {
			continue
		}
		w.konst += wt * c.konst
		w.hw += wt * c.hw
		for s := range S {
			dst, src := w.val[s], c.val[s]
			for i := range dst {
				dst[i] += wt * src[i]
			}
		}
	}
	m.complete(w)
}

// evaluate is μ_B at a full path and whether it satisfies the feasibility cuts.
func (m *Master) evaluate(path []int) (float64, bool) {
	mu := math.Inf(-1)
	for k := range m.cuts {
		v := m.valueAt(&m.cuts[k], path)
		if m.cuts[k].kind == gbd.FeasibilityCut {
			if v > gbd.FeasTol {
				return 0, false
			}
		} else {
			mu = math.Max(mu, v)
		}
	}
	return mu, true
}

// maxOpt is μ_B at a full path: the largest optimality cut.
func (m *Master) maxOpt(path []int) float64 {
	return gbd.MaxOptimalityOf(m.cuts, func(c *stagedCut) bool { return c.kind == gbd.OptimalityCut }, func(c *stagedCut) float64 { return m.valueAt(c, path) })
}

// pathOf is the pattern path of y, if y is admissible.
func (m *Master) pathOf(y []float64) ([]int, bool) {
	sm := m.sm
	p := make([]int, sm.Stages())
	a, b := 0, 0
	for s, vs := range sm.Vars() {
		var mask uint32
		for j, i := range vs {
			if y[i] > 0.5 {
				mask |= 1 << j
			}
		}
		c := slices.Index(sm.Patterns(s), mask)
		if c < 0 || !sm.Allowed(s)[(a*sm.N(s-1)+b)*sm.N(s)+c] {
			return nil, false
		}
		p[s] = c
		a, b = b, c
	}
	return p, true
}

// yOf is the assignment of a pattern path.
func (m *Master) yOf(path []int) []float64 {
	y := make([]float64, m.ny)
	fillY(m.sm, y, path)
	return y
}

// fillY writes the assignment of the stage patterns path into y.
func fillY[P int | uint16](sm *gbd.StageModel, y []float64, path []P) {
	clear(y)
	for s, vs := range sm.Vars() {
		mask := sm.Patterns(s)[path[s]]
		for j, i := range vs {
			if mask>>j&1 == 1 {
				y[i] = 1
			}
		}
	}
}
