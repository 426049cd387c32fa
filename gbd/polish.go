package gbd

import (
	"math"
	"math/bits"

	"gbdmpc/internal/scratch"
)

// MaxPolishStage is the largest stage Polisher re-chooses whole (2^MaxPolishStage settings);
// larger stages are left as they are.
const MaxPolishStage = 10

// Polisher improves an assignment for the current master problem by block coordinate descent over
// the stages of Y_pb (a plan's move blocks): it re-chooses the binaries of one stage at a time,
// trying every setting of that stage that keeps K y ≤ b and every feasibility cut, and keeps the
// one of least μ_B = max over the optimality cuts, until a whole pass over the stages improves
// nothing. It is the cheap improvement of a proposal Algorithm 2 may make before the time-limited
// master: the result is admissible, feasible and never worse than the start, and the master,
// warm-started with it, has a better incumbent to prune against. A Polisher is for one goroutine
// and keeps its scratch between calls.
type Polisher struct {
	val   []float64 // each cut's value at y
	act   []float64 // each pure row's activity K_j y
	sub   []float64 // per setting of the stage, per cut: the stage's part of the cut at that setting
	rowAt [][]rowTerm
	ypb   *Admissible
}

// rowTerm is binary i's coefficient in pure row j.
type rowTerm struct {
	row  int
	coef float64
}

// Polish improves y in place and returns μ_B(y) and the number of stages it changed. y must be
// admissible and satisfy the feasibility cuts, and ypb must have stages; otherwise y is left as it
// is. A set without optimality cuts has nothing to improve.
func (p *Polisher) Polish(ypb *Admissible, cuts []Cut, y []float64) (mu float64, moves int) {
	mu = MaxOptimality(cuts, y)
	if len(ypb.Stages) == 0 || len(y) != ypb.NY || math.IsInf(mu, -1) || !SatisfiesFeasibilityCuts(cuts, y) {
		return mu, 0
	}
	p.index(ypb)
	p.act = scratch.Resize(p.act, len(ypb.Rows))
	clear(p.act)
	for j, r := range ypb.Rows {
		for t, i := range r.Idx {
			p.act[j] += r.Coef[t] * y[i]
		}
	}
	for j, r := range ypb.Rows {
		if p.act[j] > r.RHS+1e-9 {
			return mu, 0 // not admissible
		}
	}
	p.val = scratch.Resize(p.val, len(cuts))
	for k := range cuts {
		p.val[k] = cuts[k].Eval(y)
	}
	for pass := 0; pass < 4*len(ypb.Stages); pass++ {
		improved := false
		for _, st := range ypb.Stages {
			if len(st) > MaxPolishStage || len(st) == 0 {
				continue
			}
			if m, ok := p.restage(ypb, cuts, st, y, mu); ok {
				mu, improved = m, true
				moves++
			}
		}
		if !improved {
			break
		}
	}
	if moves > 0 {
		mu = MaxOptimality(cuts, y) // free of the updates' rounding
	}
	return mu, moves
}

// index lists, per binary, the pure rows it appears in (once per Y_pb).
func (p *Polisher) index(ypb *Admissible) {
	if p.ypb == ypb {
		return
	}
	p.ypb = ypb
	p.rowAt = make([][]rowTerm, ypb.NY)
	for j, r := range ypb.Rows {
		for t, i := range r.Idx {
			p.rowAt[i] = append(p.rowAt[i], rowTerm{j, r.Coef[t]})
		}
	}
}

// restage sets stage st of y to its best setting if that lowers μ_B below mu, updating the cut
// values and row activities; it reports the new μ_B.
func (p *Polisher) restage(ypb *Admissible, cuts []Cut, st []int, y []float64, mu float64) (float64, bool) {
	n, nc := len(st), len(cuts)
	settings := 1 << n
	// sub[s*nc+k] is Σ_{i of st on in s} Coef_k[i], built from the setting without its lowest bit.
	p.sub = scratch.Resize(p.sub, settings*nc)
	clear(p.sub[:nc])
	cur := 0
	for b, i := range st {
		if y[i] != 0 {
			cur |= 1 << b
		}
	}
	for s := 1; s < settings; s++ {
		b := bits.TrailingZeros(uint(s))
		i := st[b]
		prev, row := p.sub[(s&(s-1))*nc:], p.sub[s*nc:]
		for k := range nc {
			row[k] = prev[k] + cuts[k].Coef[i]
		}
	}
	base := p.sub[cur*nc : (cur+1)*nc]
	best, bestMu := -1, mu-1e-9*math.Max(1, math.Abs(mu))
	for s := range settings {
		if s == cur || !p.rowsHold(ypb, st, cur, s) {
			continue
		}
		row := p.sub[s*nc:]
		m := math.Inf(-1)
		ok := true
		for k := range nc {
			v := p.val[k] - base[k] + row[k]
			if cuts[k].Kind == FeasibilityCut {
				if v > FeasTol {
					ok = false
					break
				}
				continue
			}
			if m = math.Max(m, v); m >= bestMu {
				ok = false
				break
			}
		}
		if ok && m < bestMu {
			best, bestMu = s, m
		}
	}
	if best < 0 {
		return mu, false
	}
	row := p.sub[best*nc:]
	for k := range nc {
		p.val[k] += row[k] - base[k]
	}
	for b, i := range st {
		on := float64(best >> b & 1)
		if d := on - y[i]; d != 0 {
			for _, t := range p.rowAt[i] {
				p.act[t.row] += t.coef * d
			}
			y[i] = on
		}
	}
	return bestMu, true
}

// rowsHold reports whether changing stage st from setting cur to s keeps every pure row.
func (p *Polisher) rowsHold(ypb *Admissible, st []int, cur, s int) bool {
	diff := cur ^ s
	for b, i := range st {
		if diff>>b&1 == 0 {
			continue
		}
		d := float64(s>>b&1) - float64(cur>>b&1)
		for _, t := range p.rowAt[i] {
			p.act[t.row] += t.coef * d
		}
	}
	ok := true
	for b, i := range st {
		if diff>>b&1 == 0 {
			continue
		}
		for _, t := range p.rowAt[i] {
			if p.act[t.row] > ypb.Rows[t.row].RHS+1e-9 {
				ok = false
			}
		}
	}
	// Put the activities back.
	for b, i := range st {
		if diff>>b&1 == 0 {
			continue
		}
		d := float64(s>>b&1) - float64(cur>>b&1)
		for _, t := range p.rowAt[i] {
			p.act[t.row] -= t.coef * d
		}
	}
	return ok
}
