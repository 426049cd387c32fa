package staged

import (
	"math"

	"gbdmpc/internal/scratch"
)

// The memo of failed subtrees (nogoods).
//
// The search's tree is far larger than its state space: below a node at depth s, what the
// subtree holds depends only on the node's DP state (the class of its last two patterns, which
// fixes every completion) and on where it starts, the prefix values pre_k of the cuts and preW of
// the Lagrangian. Millions of nodes share a few dozen states. When a subtree is searched to the
// end without reaching a leaf, every node in it was pruned because some cut k (or the Lagrangian)
// bounded it at least margin above the cutoff (a feasibility cut: above FeasTol): pre_k + (the
// rest of its bound) ≥ cutoff + margin, where the rest does not depend on the prefix. So a later
// node in the same state whose prefix values are each at least pre_k − margin_k (the least margin
// over the subtree's prunes by that cut), searched under a cutoff no higher, would have every one
// of those nodes pruned again: it holds no leaf either and is pruned at once. A pruned node hands its margins on to its parent
// (pre'_k − threshold_k) like any other prune, so nogoods build on nogoods.
//
// On recorded 60-binary cut sets the exact master visits 3–10 times fewer nodes and takes 2–4
// times less time, a node costing more for the checks and margins (docs/performance.md). The
// search keeps memoRing nogoods per depth and state, the newest replacing the oldest; the memo is
// emptied for each pass (run), whose cutoffs it was recorded under.

// nogood is what a subtree searched to the end without a leaf proves: a node at the same depth
// and state whose prefix value is at least thr[j] for every cut idx[j] (idx K: the Lagrangian's)
// holds no leaf while the cutoff is at most cut.
type nogood struct {
	cut  float64
	idx  []int32
	thr  []float64
	used bool
}

// memoRing is how many nogoods the search keeps per depth and state. On recorded 60-binary cut
// sets 8 visit 20–25 % fewer nodes than 4, and 16 fewer still but no sooner (each node checks them).
const memoRing = 8

// memoReset empties the memo and the prune margins for a search of the current cuts.
func (m *Master) memoReset() {
	sm := m.sm
	S, K := sm.Stages(), len(m.cuts)
	m.mg = scratch.Resize(m.mg, S)
	m.mgT = scratch.Resize(m.mgT, S)
	for s := range S {
		m.mg[s] = scratch.Resize(m.mg[s], K+1)
		for i := range m.mg[s] {
			m.mg[s][i] = math.Inf(1)
		}
		m.mgT[s] = m.mgT[s][:0]
	}
	if len(m.memo) != S {
		m.memo, m.memoNext = make([][]nogood, S), make([][]uint8, S)
	}
	for s := 1; s < S; s++ {
		m.memo[s] = scratch.Resize(m.memo[s], m.nCls[s-1]*memoRing)
		for i := range m.memo[s] {
			m.memo[s][i].used = false
		}
		m.memoNext[s] = scratch.Resize(m.memoNext[s], m.nCls[s-1])
	}
}

// record notes a prune in the subtree of the node at depth s by cut k (K: the Lagrangian), its
// bound margin above the threshold it had to reach.
func (m *Master) record(s, k int, margin float64) {
	g := m.mg[s]
	if math.IsInf(g[k], 1) {
		m.mgT[s] = append(m.mgT[s], k)
	}
	if margin < g[k] {
		g[k] = margin
	}
}

// prefix is the node at depth s's prefix value of cut k (K: the Lagrangian's).
func (m *Master) prefix(s, k int) float64 {
	K := len(m.cuts)
	if k == K {
		return m.preW[s]
	}
	return m.pre[s*K+k]
}

// search is the depth-first branch and bound over stage s given patterns a (s−2) and b (s−1),
// with the memo: a node a nogood covers is pruned, a subtree searched to the end without a leaf
// becomes one. It returns whether it improved the incumbent (searchNode).
func (m *Master) search(s, a, b int, floor float64) bool {
	if s == 0 || m.kbest > 0 {
		return m.searchNode(s, a, b, floor)
	}
	st := int(m.rowCls[s-1][a*m.sm.N(s-1)+b])
	ring := m.memo[s][st*memoRing : (st+1)*memoRing]
	cut := m.curCut()
	for i := range ring {
		ng := &ring[i]
		if !ng.used || cut > ng.cut {
			continue
		}
		hit := true
		for j, k := range ng.idx {
			if m.prefix(s, int(k)) < ng.thr[j] {
				hit = false
				break
			}
		}
		if hit {
			m.memoHits++
			for j, k := range ng.idx {
				m.record(s-1, int(k), m.prefix(s, int(k))-ng.thr[j])
			}
			return false
		}
	}
	leafs := m.leafs
	improved := m.searchNode(s, a, b, floor)
	if m.leafs == leafs && !m.halted() {
		slot := int(m.memoNext[s][st])
		m.memoNext[s][st] = uint8((slot + 1) % memoRing)
		ng := &ring[slot]
		ng.used, ng.cut = true, m.curCut()
		ng.idx, ng.thr = ng.idx[:0], ng.thr[:0]
		for _, k := range m.mgT[s] {
			v := m.prefix(s, k)
			// The threshold errs high by a few ulps: the bounds it stands for are sums of the same
			// numbers in another order.
			ng.idx = append(ng.idx, int32(k))
			ng.thr = append(ng.thr, v-m.mg[s][k]+stagedTol(v))
		}
	}
	for _, k := range m.mgT[s] {
		m.record(s-1, k, m.mg[s][k])
		m.mg[s][k] = math.Inf(1)
	}
	m.mgT[s] = m.mgT[s][:0]
	return improved
}

// curCut is the value a node's bound must stay below to be explored now (the incumbent's, or
// the collection's threshold).
func (m *Master) curCut() float64 {
	if m.collecting {
		t := m.threshold
		if m.slack > 0 {
			t = min(t, m.incumbent()+m.slack)
		}
		return t + stagedTol(t)
	}
	return cutoff(m.incumbent())
}
