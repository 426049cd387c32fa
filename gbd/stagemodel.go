package gbd

import (
	"fmt"
	"slices"
)

// StageModel is Y_pb by stages: the admissible patterns of each stage and which pattern triples
// (stages s−2, s−1, s) satisfy the rows whose last stage is s. The engine's stage cuts read the
// patterns; the staged master (gbd/master/staged) searches over all of it. It is read-only once
// built.
type StageModel struct {
	vars    [][]int
	pats    [][]uint32
	allowed [][]bool // [s][(a·n(s−1)+b)·n(s)+c]
	// succ[s][first[s][ab]:first[s][ab+1]] are the patterns c allowed after ab = a·n(s−1)+b
	succ, first [][]int32
	// class[s][ab] numbers the distinct (b, Successors(s, ab)) among the rows ab = a·n(s−1)+b, and
	// rep[s][k] is a row of class k: rows of one class have the same DP value (Classes).
	class, rep [][]int32
	ny         int
	pure       []PureRow // a copy of the rows it was built from (Describes)
}

// Describes reports whether sm is the stage model NewStageModel builds from these arguments, so
// that a master reset for the next control step of the same plant keeps it instead of building it
// again (a few milliseconds at 40 binaries).
func (sm *StageModel) Describes(ny int, stages [][]int, pure []PureRow) bool {
	if sm == nil || ny != sm.ny || !slices.EqualFunc(stages, sm.vars, slices.Equal[[]int]) {
		return false
	}
	return slices.EqualFunc(pure, sm.pure, func(a, b PureRow) bool {
		return a.RHS == b.RHS && slices.Equal(a.Idx, b.Idx) && slices.Equal(a.Coef, b.Coef)
	})
}

// Stages is the number of stages.
func (sm *StageModel) Stages() int { return len(sm.vars) }

// N is the pattern count of stage s; the virtual stages before the first have one empty pattern.
func (sm *StageModel) N(s int) int {
	if s < 0 {
		return 1
	}
	return len(sm.pats[s])
}

// Vars are the binaries of each stage, as given to NewStageModel (bit j of a stage's pattern is
// binary Vars()[s][j]).
func (sm *StageModel) Vars() [][]int { return sm.vars }

// Patterns are stage s's admissible patterns: the masks that satisfy the pure rows lying in that
// stage alone.
func (sm *StageModel) Patterns(s int) []uint32 { return sm.pats[s] }

// Allowed is stage s's table of pattern triples: entry (a·N(s−1)+b)·N(s)+c says whether patterns
// a, b and c of stages s−2, s−1 and s satisfy every pure row whose last stage is s.
func (sm *StageModel) Allowed(s int) []bool { return sm.allowed[s] }

// Successors are the patterns c of stage s allowed after patterns a and b of stages s−2 and s−1,
// ab = a·N(s−1)+b, ascending: the true entries of Allowed(s)'s row ab, for loops that would
// otherwise test every entry.
func (sm *StageModel) Successors(s, ab int) []int32 {
	f := sm.first[s]
	return sm.succ[s][f[ab]:f[ab+1]]
}

// Classes groups the rows ab = a·N(s−1)+b of stage s's table whose b and Successors are the same,
// so that a backward DP, whose value at ab is a minimum over the successors of terms depending on
// b and c only, computes it once per class: class[ab] is ab's class and rep[k] one row of class k.
// On the pump stations a pump's start rows tie three stages, but of the 256 rows of a 16-pattern
// stage only 51 classes differ.
func (sm *StageModel) Classes(s int) (class, rep []int32) { return sm.class[s], sm.rep[s] }

// MaxStageBinaries bounds a stage's binaries: its patterns are found among 2^k subsets.
const MaxStageBinaries = 16

// NewStageModel builds the stage model of the ny binaries split into stages under the pure rows,
// or says why it cannot: a stage of no or more than MaxStageBinaries binaries, a binary in no or
// two stages, a row spanning more than three consecutive stages, a stage without an admissible
// pattern.
func NewStageModel(ny int, stages [][]int, pure []PureRow) (*StageModel, error) {
	stageOf := make([]int, ny)
	for i := range stageOf {
		stageOf[i] = -1
	}
	sm := &StageModel{ny: ny}
	for _, vs := range stages {
		sm.vars = append(sm.vars, slices.Clone(vs))
	}
	for _, pr := range pure {
		sm.pure = append(sm.pure, PureRow{Idx: slices.Clone(pr.Idx), Coef: slices.Clone(pr.Coef), RHS: pr.RHS})
	}
	for s, vs := range stages {
		if len(vs) == 0 || len(vs) > MaxStageBinaries {
			return nil, fmt.Errorf("stage %d has %d binaries, want 1..%d", s, len(vs), MaxStageBinaries)
		}
		for _, i := range vs {
			if i < 0 || i >= ny || stageOf[i] >= 0 {
				return nil, fmt.Errorf("stage %d: binary %d out of range or in two stages", s, i)
			}
			stageOf[i] = s
		}
	}
	for i, s := range stageOf {
		if s < 0 {
			return nil, fmt.Errorf("binary %d is in no stage", i)
		}
	}
	// Each row's contribution by stage and pattern mask, filed under the stage whose choice completes it.
	byLast := make([][]stageRow, len(stages))
	for r, pr := range pure {
		if len(pr.Idx) != len(pr.Coef) {
			return nil, fmt.Errorf("pure row %d: %d indices, %d coefficients", r, len(pr.Idx), len(pr.Coef))
		}
		lo, hi := len(stages), -1
		for _, i := range pr.Idx {
			if i < 0 || i >= ny {
				return nil, fmt.Errorf("pure row %d: binary %d out of range", r, i)
			}
			lo, hi = min(lo, stageOf[i]), max(hi, stageOf[i])
		}
		if hi < 0 {
			if 0 > pr.RHS+1e-9 {
				return nil, fmt.Errorf("pure row %d has no binaries and cannot hold", r)
			}
			continue
		}
		if hi-lo > 2 {
			return nil, fmt.Errorf("pure row %d spans stages %d..%d; at most three consecutive stages", r, lo, hi)
		}
		rw := stageRow{rhs: pr.RHS}
		for s := hi - 2; s <= hi; s++ {
			if s < 0 {
				continue
			}
			p := stageRowPart{stage: s, coef: make([]float64, len(stages[s]))}
			for k, i := range pr.Idx {
				if stageOf[i] == s {
					p.coef[slices.Index(stages[s], i)] += pr.Coef[k]
				}
			}
			rw.parts = append(rw.parts, p)
		}
		byLast[hi] = append(byLast[hi], rw)
	}
	// Patterns of each stage: the masks that satisfy the rows lying in that stage alone.
	sm.pats = make([][]uint32, len(stages))
	for s, vs := range stages {
		for mask := uint32(0); mask < 1<<len(vs); mask++ {
			ok := true
			for _, rw := range byLast[s] {
				if rw.onlyStage(s) {
					v := 0.0
					for _, p := range rw.parts {
						if p.stage == s {
							v += p.value(mask)
						}
					}
					if v > rw.rhs+1e-9 {
						ok = false
						break
					}
				}
			}
			if ok {
				sm.pats[s] = append(sm.pats[s], mask)
			}
		}
		if len(sm.pats[s]) == 0 {
			return nil, fmt.Errorf("stage %d has no admissible pattern", s)
		}
	}
	maskAt := func(s, i int) uint32 {
		if s < 0 {
			return 0
		}
		return sm.pats[s][i]
	}
	sm.allowed = make([][]bool, len(stages))
	for s := range stages {
		na, nb, nc := sm.N(s-2), sm.N(s-1), sm.N(s)
		al := make([]bool, na*nb*nc)
		for a := range na {
			for b := range nb {
				for c := range nc {
					ok := true
					for _, rw := range byLast[s] {
						v := 0.0
						for _, p := range rw.parts {
							switch p.stage {
							case s:
								v += p.value(maskAt(s, c))
							case s - 1:
								v += p.value(maskAt(s-1, b))
							case s - 2:
								v += p.value(maskAt(s-2, a))
							}
						}
						if v > rw.rhs+1e-9 {
							ok = false
							break
						}
					}
					al[(a*nb+b)*nc+c] = ok
				}
			}
		}
		sm.allowed[s] = al
	}
	sm.succ, sm.first = make([][]int32, len(stages)), make([][]int32, len(stages))
	for s := range stages {
		nc := sm.N(s)
		rows := len(sm.allowed[s]) / nc
		first := make([]int32, rows+1)
		var succ []int32
		for ab := range rows {
			for c, ok := range sm.allowed[s][ab*nc : (ab+1)*nc] {
				if ok {
					succ = append(succ, int32(c))
				}
			}
			first[ab+1] = int32(len(succ))
		}
		sm.succ[s], sm.first[s] = succ, first
	}
	sm.class, sm.rep = make([][]int32, len(stages)), make([][]int32, len(stages))
	for s := range stages {
		nb := sm.N(s - 1)
		rows := len(sm.first[s]) - 1
		class := make([]int32, rows)
		var rep []int32
		seen := map[string]int32{}
		key := make([]byte, 0, 64)
		for ab := range rows {
			key = key[:0]
			key = append(key, byte(ab%nb), byte(ab%nb>>8))
			for _, c := range sm.Successors(s, ab) {
				key = append(key, byte(c), byte(c>>8))
			}
			k, ok := seen[string(key)]
			if !ok {
				k = int32(len(rep))
				seen[string(key)] = k
				rep = append(rep, int32(ab))
			}
			class[ab] = k
		}
		sm.class[s], sm.rep[s] = class, rep
	}
	return sm, nil
}

// stageRow is a pure row by stage: each stage's coefficients on its local binaries.
type stageRow struct {
	parts []stageRowPart
	rhs   float64
}

type stageRowPart struct {
	stage int
	coef  []float64 // coefficient of the stage's local binary j
}

// value is the part's sum on a pattern mask.
func (p stageRowPart) value(mask uint32) float64 {
	v := 0.0
	for j, c := range p.coef {
		if mask>>j&1 == 1 {
			v += c
		}
	}
	return v
}

// onlyStage reports whether the row's non-zero coefficients all lie in stage s.
func (r *stageRow) onlyStage(s int) bool {
	for _, p := range r.parts {
		if p.stage == s {
			continue
		}
		for _, c := range p.coef {
			if c != 0 {
				return false
			}
		}
	}
	return true
}
