package staged

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gbdmpc/internal/scratch"
)

// AutoWorkers, as Master.Workers, searches on every processor (GOMAXPROCS) while no other staged
// master of the process is solving, and on one otherwise: a plant alone on a daemon gets the idle
// cores, a fleet that keeps them busy gets no speculative work on top.
const AutoWorkers = -1

// solving counts the staged masters of the process inside Solve (AutoWorkers).
var solving atomic.Int32

// splitDepth is the depth at which a parallel search hands out its subtrees: the nodes that
// survive the first two stages (up to a few hundred) are the work items, taken in the search's
// order by whichever worker is free.
const splitDepth = 2

// shared is what the workers of one parallel search share: the least μ_B found (float64 bits),
// what stops them all, the node and pool counts their budgets are checked against.
type shared struct {
	best    atomic.Uint64
	halted  atomic.Bool // some worker is done, stopped or overflowed: every worker returns
	dropped atomic.Bool // some worker dropped the collection: the pool is lost for all
	nodes   atomic.Int64
	poolN   atomic.Int64
	maxPool int64
}

// item is a subtree handed to a worker: the patterns of the first splitDepth stages, the
// optimality and feasibility cuts' values there and the Lagrangian's least completion (key).
type item struct {
	a, b      int
	key, preW float64
	idx       int // its place in the order; pre (K values) and path (splitDepth patterns) in the buffers
	// what the worker that took it left: its pool entries [from, to) in that worker's pool, and
	// whether its search ran to the end.
	worker, from, to int
	finished         bool
}

// workerCount is how many goroutines the next search may use.
func (m *Master) workerCount() int {
	n := m.Workers
	switch {
	case n == AutoWorkers:
		if solving.Load() > 1 {
			return 1
		}
		return runtime.GOMAXPROCS(0)
	case n < 1:
		return 1
	}
	return n
}

// halted reports whether the search must return: this worker's own end, or another worker's
// (parallel search). A collection another worker dropped is dropped here too.
func (m *Master) halted() bool {
	if m.done || m.stopped {
		return true
	}
	if p := m.par; p != nil {
		if p.halted.Load() {
			return true
		}
		if m.collecting && p.dropped.Load() {
			m.dropCollection()
		}
	}
	return false
}

// halt tells the other workers of a parallel search to return.
func (m *Master) halt() {
	if m.par != nil {
		m.par.halted.Store(true)
	}
}

// incumbent is the least μ_B found so far, by this search or (parallel) by any of its workers.
func (m *Master) incumbent() float64 {
	if m.par != nil {
		return math.Min(m.bestVal, math.Float64frombits(m.par.best.Load()))
	}
	return m.bestVal
}

// improve makes the current path the incumbent, of value v, and tells the other workers.
func (m *Master) improve(v float64) {
	copy(m.best, m.path)
	m.bestVal = v
	if p := m.par; p != nil {
		for {
			old := p.best.Load()
			if v >= math.Float64frombits(old) || p.best.CompareAndSwap(old, math.Float64bits(v)) {
				return
			}
		}
	}
}

// overCap reports whether the search is past its node budget (a parallel search counts its
// workers' nodes together, 256 at a time).
func (m *Master) overCap() bool {
	if m.par == nil {
		return m.nodes > m.nodeCap
	}
	return m.nodes&255 == 0 && m.par.nodes.Add(256) > int64(m.nodeCap)
}

// poolFull reports whether the collection holds MaxPool assignments (all workers' together).
func (m *Master) poolFull() bool {
	if m.par == nil {
		return len(m.poolMu) >= m.maxPool()
	}
	return m.par.poolN.Add(1) > m.par.maxPool
}

// emit records the node at depth d (patterns a, b at d−2, d−1) as a work item.
func (m *Master) emit(d, a, b int, key float64) {
	K := len(m.cuts)
	m.leafs++ // the subtrees above it are not searched to the end here
	m.items = append(m.items, item{a: a, b: b, key: key, preW: m.preW[d], idx: len(m.items)})
	m.itemPre = append(m.itemPre, m.pre[d*K:(d+1)*K]...)
	m.itemPath = append(m.itemPath, m.path[:d]...)
}

// run is the search from the root with this lower bound on the optimum: on one goroutine, or on
// several when workerCount allows and Y_pb has stages enough to split. The parallel search walks
// the first splitDepth stages alone (emit), then its workers take the surviving subtrees in the
// search's order, pruning with the least μ_B any of them has found. Its answer is the sequential
// search's: the optimum (ties between workers go to the subtree first in the order), a collection
// of every leaf up to the threshold in the sequential order, the same budgets (counted together)
// and, when the time limit stops it, a bound from the subtrees left unfinished.
func (m *Master) run(floor float64) bool {
	m.memoReset() // its nogoods hold for the cutoffs of this pass only
	S := m.sm.Stages()
	n := m.workerCount()
	if n < 2 || S <= splitDepth+1 || m.kbest > 0 {
		return m.search(0, 0, 0, floor)
	}
	m.items, m.itemPre, m.itemPath = m.items[:0], m.itemPre[:0], m.itemPath[:0]
	m.emitAt = splitDepth
	improved := m.search(0, 0, 0, floor)
	m.emitAt = 0
	if m.stopped {
		// Stopped while handing out: the items are open nodes too.
		for _, it := range m.items {
			m.parOpen = math.Min(m.parOpen, it.key)
		}
		return improved
	}
	if m.done || m.overflow || len(m.items) == 0 {
		return improved
	}
	p := &shared{maxPool: int64(m.maxPool())}
	p.best.Store(math.Float64bits(m.bestVal))
	p.nodes.Store(int64(m.nodes))
	for len(m.workers) < n {
		m.workers = append(m.workers, &Master{})
	}
	ws := m.workers[:n]
	for i, w := range ws {
		m.dress(w, p, i)
	}
	var next atomic.Int64
	work := func(w *Master) {
		for !p.halted.Load() {
			i := int(next.Add(1)) - 1
			if i >= len(m.items) {
				return
			}
			w.take(m, &m.items[i], floor)
		}
	}
	var wg sync.WaitGroup
	for _, w := range ws[1:] {
		wg.Go(func() { work(w) })
	}
	work(ws[0])
	wg.Wait()
	return m.merge(ws, p) || improved
}

// dress readies worker w (index i) for a parallel search of m: m's cuts and tables, read only,
// and buffers of its own for everything the search writes.
func (m *Master) dress(w *Master, p *shared, i int) {
	S, K := m.sm.Stages(), len(m.cuts)
	own := struct {
		pre, preW, poolMu, poolViol []float64
		path, best, pos             []int
		order                       [][]int
		keys                        [][]float64
		feasOrder, optOrder         []int
		pool                        []uint16
		memo                        [][]nogood
		memoNext                    [][]uint8
		mg                          [][]float64
		mgT                         [][]int
	}{w.pre, w.preW, w.poolMu, w.poolViol, w.path, w.best, w.pos, w.order, w.keys, w.feasOrder, w.optOrder, w.pool, w.memo, w.memoNext, w.mg, w.mgT}
	workers, items, itemPre, itemPath := w.workers, w.items, w.itemPre, w.itemPath
	*w = *m
	w.workers, w.items, w.itemPre, w.itemPath = workers, items, itemPre, itemPath
	w.pre = scratch.Resize(own.pre, (S+1)*K)
	w.preW = scratch.Resize(own.preW, S+1)
	w.path, w.best, w.pos = scratch.Resize(own.path, S), scratch.Resize(own.best, S), scratch.Resize(own.pos, S)
	copy(w.best, m.best)
	if len(own.order) != S {
		own.order, own.keys = make([][]int, S), make([][]float64, S)
	}
	w.order, w.keys = own.order, own.keys
	w.feasOrder = append(own.feasOrder[:0], m.feasOrder...)
	w.optOrder = append(own.optOrder[:0], m.optOrder...)
	w.pool, w.poolMu, w.poolViol = own.pool[:0], own.poolMu[:0], own.poolViol[:0]
	w.nodes, w.par, w.worker, w.emitAt = 0, p, i, 0
	w.memo, w.memoNext, w.mg, w.mgT, w.memoHits = own.memo, own.memoNext, own.mg, own.mgT, 0
	w.memoReset()
}

// take searches item it's subtree.
func (w *Master) take(m *Master, it *item, floor float64) {
	K, d := len(w.cuts), splitDepth
	copy(w.path[:d], m.itemPath[it.idx*d:(it.idx+1)*d])
	copy(w.pre[d*K:(d+1)*K], m.itemPre[it.idx*K:(it.idx+1)*K])
	w.preW[d] = it.preW
	it.worker, it.from = w.worker, len(w.poolMu)
	before := w.bestVal
	w.search(d, it.a, it.b, floor)
	it.to = len(w.poolMu)
	it.finished = !w.halted()
	if w.bestVal < before {
		w.bestItem = it.idx
	}
}

// merge gathers the workers' answers into m after a parallel search and reports whether the
// incumbent improved.
func (m *Master) merge(ws []*Master, p *shared) bool {
	// The least μ_B any worker found below the incumbent; within the tolerance of the bounds, the
	// one of the earliest subtree, as the sequential search would have kept it.
	var from *Master
	for _, w := range ws {
		m.nodes += w.nodes
		m.memoHits += w.memoHits
		m.stopped = m.stopped || w.stopped
		m.overflow = m.overflow || w.overflow
		m.done = m.done || w.done
		if !(w.bestVal < m.bestVal) {
			continue
		}
		if from == nil || w.bestVal < cutoff(from.bestVal) || w.bestVal <= from.bestVal+stagedTol(from.bestVal) && w.bestItem < from.bestItem {
			from = w
		}
	}
	if from != nil {
		copy(m.best, from.best)
		m.bestVal = from.bestVal
	}
	if m.stopped {
		m.stopDepth = -1 // the open nodes are the unfinished items
		for i := range m.items {
			if it := &m.items[i]; !it.finished {
				m.parOpen = math.Min(m.parOpen, it.key)
			}
		}
	}
	if m.collecting {
		if p.dropped.Load() || m.overflow {
			m.dropCollection()
		} else {
			// In the sequential search's order: the items', each in its worker's order.
			S := m.sm.Stages()
			m.pool, m.poolMu, m.poolViol = m.pool[:0], m.poolMu[:0], m.poolViol[:0]
			for i := range m.items {
				it := &m.items[i]
				w := ws[it.worker]
				m.pool = append(m.pool, w.pool[it.from*S:it.to*S]...)
				m.poolMu = append(m.poolMu, w.poolMu[it.from:it.to]...)
				m.poolViol = append(m.poolViol, w.poolViol[it.from:it.to]...)
			}
		}
	}
	return from != nil
}
