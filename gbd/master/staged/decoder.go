package staged

import (
	"errors"
	"fmt"
	"math"

	"gbdmpc/gbd"
	"gbdmpc/internal/scratch"
)

// Decoder answers a policy's questions about a staged Y_pb too large to enumerate, exactly:
// the admissible assignment of greatest score that the master's feasibility cuts allow (Best, the
// structured decoder of a per-binary policy), or the master's own optimum (Optimum, the oracle).
// It follows the master views of a solve, adding only the cuts it has not seen, so successive
// calls within a solve cost one DP per new cut and one search.
//
// A Decoder is for one goroutine at a time, like the policies that own one.
type Decoder struct {
	feas, all follower
	score     gbd.Cut
	cands     []float64 // Screened's candidates, one row each
	on        []int     // the binaries on in a candidate
}

// follower keeps a Master in step with successive views' cuts (all of them, or the
// feasibility cuts only), starting again when a view is not a continuation of the last.
type follower struct {
	m        Master
	feasOnly bool
	sig      string
	seen     []cutMark   // every cut of the last view, in order
	hs       *gbd.Hinges // the hinges the master took (the view's optimality cuts carry them)
}

// cutMark tells a cut from another well enough to recognise a view that continues the last one
// (the engine only appends cuts within a solve; a new solve starts with the carried cuts).
type cutMark struct {
	kind    gbd.CutKind
	konst   float64
	carried bool
	iter    int
}

func markOf(c *gbd.Cut) cutMark {
	return cutMark{kind: c.Kind, konst: c.Const, carried: c.Carried, iter: c.Iter}
}

// ErrNoAdmissible is the decoder's answer when the feasibility cuts exclude every admissible
// assignment: there is nothing to propose.
var ErrNoAdmissible = errors.New("the feasibility cuts exclude every admissible assignment")

// errNotStaged: the decoder works over the stages of Y_pb.
var errNotStaged = errors.New("decoder: Y_pb has no stages (the staged master's structure)")

func (f *follower) sync(v *gbd.MasterView) error {
	ypb := v.Ypb
	if ypb == nil || ypb.Stages == nil {
		return errNotStaged
	}
	fresh := f.sig != ypb.Signature || len(v.Cuts) < len(f.seen)
	// The engine's cuts carry the problem's hinges (gbd.Hinges), which the master must take
	// before its first cut: new ones start it again.
	hs := gbd.HingesOf(v.Cuts)
	if hs != nil && !hs.Equal(f.hs) {
		fresh = true
	}
	if !fresh {
		for k := range f.seen {
			if markOf(&v.Cuts[k]) != f.seen[k] {
				fresh = true
				break
			}
		}
	}
	if fresh {
		if err := f.m.Reset(ypb.NY, ypb.Rows, ypb); err != nil {
			return err
		}
		if f.feasOnly {
			f.m.MaxPool = -1 // the score cut changes at every call: no pool survives it
		}
		f.hs = nil
		if hs != nil && !f.feasOnly && f.m.TakeHinges(hs) {
			f.hs = hs
		}
		f.sig, f.seen = ypb.Signature, f.seen[:0]
	}
	for k := len(f.seen); k < len(v.Cuts); k++ {
		c := &v.Cuts[k]
		if len(c.Coef) != ypb.NY {
			return fmt.Errorf("decoder: cut %d has %d coefficients for %d binaries", k, len(c.Coef), ypb.NY)
		}
		if !f.feasOnly || c.Kind == gbd.FeasibilityCut {
			f.m.AddCut(c)
		}
		f.seen = append(f.seen, markOf(c))
	}
	return nil
}

// Best is the admissible y maximising score·y among those the view's feasibility cuts allow (ties
// broken by the search order), written into y; ErrNoAdmissible when the cuts allow none.
func (d *Decoder) Best(v *gbd.MasterView, score, y []float64) error {
	return d.Screened(v, score, 1, y)
}

// Screened is Best over k candidates: of the k admissible assignments of greatest score·y that
// the view's feasibility cuts allow, the one the view's optimality cuts value least (μ_B, what
// Algorithm 2 compares a proposal by; the greater score on ties), written into y. k ≤ 1 is Best.
// The candidates cost one k-best search and k·(optimality cuts) cut evaluations.
func (d *Decoder) Screened(v *gbd.MasterView, score []float64, k int, y []float64) error {
	d.feas.feasOnly = true
	if err := d.feas.sync(v); err != nil {
		return err
	}
	if len(score) != v.Ypb.NY || len(y) != v.Ypb.NY {
		return fmt.Errorf("decoder: %d scores and %d outputs for %d binaries", len(score), len(y), v.Ypb.NY)
	}
	// One optimality cut μ ≥ −score·y makes the master's optimum the best-scored assignment.
	d.score.Kind, d.score.Const = gbd.OptimalityCut, 0
	d.score.Coef = scratch.Resize(d.score.Coef, len(score))
	for i, s := range score {
		d.score.Coef[i] = -s
	}
	m := &d.feas.m
	m.AddCut(&d.score)
	defer m.popCut()
	if k <= 1 {
		r, err := m.Solve(0, nil)
		return answer(r, err, y)
	}
	var n int
	var err error
	if d.cands, n, err = m.SolveK(k, d.cands); err != nil {
		return err
	}
	if n == 0 {
		return ErrNoAdmissible
	}
	// μ_B of each candidate over its binaries that are on (a plan runs a few pumps), with the
	// cuts' stage tables and hinges, abandoned as soon as one cut puts it at or above the best so
	// far.
	best, mu := 0, math.Inf(1)
	ny := len(y)
	for j := range n {
		c := d.cands[j*ny : (j+1)*ny]
		d.on = d.on[:0]
		for i, x := range c {
			if x != 0 {
				d.on = append(d.on, i)
			}
		}
		cm := math.Inf(-1)
		var hs *gbd.Hinges // the hinges' cost at c, computed once for the cuts that carry them
		h := 0.0
		for ci := range v.Cuts {
			cut := &v.Cuts[ci]
			if cut.Kind != gbd.OptimalityCut {
				continue
			}
			s := cut.Const
			for _, i := range d.on {
				s += cut.Coef[i]
			}
			if cut.Tables != nil {
				s += cut.Tables.Eval(c)
			}
			if cut.Hinges != nil {
				if cut.Hinges != hs {
					hs, h = cut.Hinges, cut.Hinges.Eval(c)
				}
				s += h
			}
			if cm = math.Max(cm, s); cm >= mu {
				break
			}
		}
		if cm < mu {
			best, mu = j, cm
		}
	}
	copy(y, d.cands[best*ny:(best+1)*ny])
	return nil
}

// Optimum is the master problem's optimum over every cut of the view (what a perfect agent would
// propose), written into y; ErrNoAdmissible when the master is infeasible.
func (d *Decoder) Optimum(v *gbd.MasterView, y []float64) error {
	if err := d.all.sync(v); err != nil {
		return err
	}
	r, err := d.all.m.Solve(0, nil)
	return answer(r, err, y)
}

// answer copies an exact solve's assignment into y.
func answer(r gbd.MasterResult, err error, y []float64) error {
	if err != nil {
		return err
	}
	if r.Y == nil {
		return ErrNoAdmissible
	}
	copy(y, r.Y)
	return nil
}
