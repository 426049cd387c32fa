package cbc

import (
	"math"
	"math/rand"
)

// rowBuilder accumulates CSR rows for test problems.
type rowBuilder struct {
	start []int32
	idx   []int32
	val   []float64
	lb    []float64
	ub    []float64
}

func (b *rowBuilder) add(idx []int32, val []float64, lb, ub float64) {
	if b.start == nil {
		b.start = []int32{0}
	}
	b.idx = append(b.idx, idx...)
	b.val = append(b.val, val...)
	b.start = append(b.start, int32(len(b.idx)))
	b.lb = append(b.lb, lb)
	b.ub = append(b.ub, ub)
}

func (b *rowBuilder) into(p *Problem) *Problem {
	p.RowStart, p.RowIdx, p.RowVal, p.RowLB, p.RowUB = b.start, b.idx, b.val, b.lb, b.ub
	return p
}

// master is a GBD master instance: min μ s.t. μ ≥ A[k]·y + C[k] (optimality
// cuts), F[k]·y + G[k] ≤ 0 (feasibility cuts), Σ y over consecutive groups
// of 3 ≤ 2, y binary, μ ≥ MuLB.
type master struct {
	NY   int
	A    [][]float64
	C    []float64
	F    [][]float64
	G    []float64
	MuLB float64
}

func randomMaster(rng *rand.Rand, ny, nOpt, nFeas int) *master {
	m := &master{NY: ny, MuLB: -1e6}
	coef := func() []float64 {
		a := make([]float64, ny)
		for i := range a {
			a[i] = rng.Float64()*40 - 20
		}
		return a
	}
	for range nOpt {
		m.A = append(m.A, coef())
		m.C = append(m.C, rng.Float64()*100-50)
	}
	for range nFeas {
		m.F = append(m.F, coef())
		m.G = append(m.G, rng.Float64()*80-20)
	}
	return m
}

func (m *master) problem() *Problem {
	n := m.NY + 1
	mu := int32(m.NY)
	p := &Problem{NumCols: n, ColLB: make([]float64, n), ColUB: make([]float64, n), Obj: make([]float64, n), Integer: make([]bool, n)}
	for i := 0; i < m.NY; i++ {
		p.ColUB[i], p.Integer[i] = 1, true
	}
	p.ColLB[mu], p.ColUB[mu], p.Obj[mu] = m.MuLB, math.Inf(1), 1
	var b rowBuilder
	for k, a := range m.A {
		idx := make([]int32, 0, n)
		val := make([]float64, 0, n)
		for i, v := range a {
			idx, val = append(idx, int32(i)), append(val, v)
		}
		idx, val = append(idx, mu), append(val, -1)
		b.add(idx, val, math.Inf(-1), -m.C[k]) // a·y − μ ≤ −c
	}
	for k, f := range m.F {
		idx := make([]int32, 0, m.NY)
		for i := range f {
			idx = append(idx, int32(i))
		}
		b.add(idx, append([]float64(nil), f...), math.Inf(-1), -m.G[k])
	}
	for g := 0; g+3 <= m.NY; g += 3 {
		b.add([]int32{int32(g), int32(g + 1), int32(g + 2)}, []float64{1, 1, 1}, math.Inf(-1), 2)
	}
	return b.into(p)
}

// eval returns the master objective at binary y, or +Inf if y violates a
// feasibility cut or a group row.
func (m *master) eval(y []float64) float64 {
	for g := 0; g+3 <= m.NY; g += 3 {
		if y[g]+y[g+1]+y[g+2] > 2.5 {
			return math.Inf(1)
		}
	}
	for k, f := range m.F {
		s := m.G[k]
		for i, v := range f {
			s += v * y[i]
		}
		if s > 1e-9 {
			return math.Inf(1)
		}
	}
	mu := m.MuLB
	for k, a := range m.A {
		s := m.C[k]
		for i, v := range a {
			s += v * y[i]
		}
		mu = math.Max(mu, s)
	}
	return mu
}

// brute enumerates all 2^NY assignments.
func (m *master) brute() (best float64, arg []float64) {
	best = math.Inf(1)
	y := make([]float64, m.NY)
	for mask := 0; mask < 1<<m.NY; mask++ {
		for i := range y {
			y[i] = float64(mask >> i & 1)
		}
		if v := m.eval(y); v < best {
			best, arg = v, append([]float64(nil), y...)
		}
	}
	return best, arg
}
