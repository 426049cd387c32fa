package ipm

import (
	"slices"

	"gbdmpc/gbd/nlp"
)

// structure is the symbolic analysis of one problem structure (N, M and the two sparsity
// patterns). It depends on nothing that changes with y, so it is built once and reused for every
// solve whose structure compares equal.
//
// The Hessian of the Lagrangian couples variables only inside the connected components of its
// pattern graph ("blocks"). The Newton system is reduced to the rows' multipliers by eliminating
// x block by block (H is block diagonal), which leaves the m×m Schur complement
// S = J H⁻¹ Jᵀ + D. Two rows are coupled in S only when they touch a common block, so S's
// bandwidth is known here too. For gbd's problems every block has one or two variables.
type structure struct {
	n, m             int
	jacRow, jacCol   []int32 // copies of the pattern, for the same-structure test
	hessRow, hessCol []int32

	nblk     int
	blkStart []int32 // block b owns blkVar[blkStart[b]:blkStart[b+1]]
	blkVar   []int32
	varBlk   []int32 // block of each variable
	varLoc   []int32 // position of each variable inside its block
	// Rows touching block b, ascending: blkRow[blkRowStart[b]:blkRowStart[b+1]].
	blkRowStart []int32
	blkRow      []int32
	// Flat storage offsets: block b's dense bs×bs Hessian at hOff[b], its dense m_b×bs Jacobian
	// (row-major, local rows) at jOff[b].
	hOff, jOff []int32
	hLen, jLen int
	maxBS      int // largest block
	maxBR      int // most rows touching one block
	// Per Hessian entry: offset of (row, col) and (col, row) in the block storage.
	hessAt, hessAtT []int32
	// Per Jacobian entry: offset in the block Jacobian storage.
	jacAt []int32
	// band is the bandwidth of S (0: diagonal).
	band int
	// linear marks the variables without a Hessian entry: every function is affine in them, so
	// their Jacobian column is constant and they may be rescaled (setup.go, colScale).
	linear []bool
}

// same reports whether p has the structure st was built for.
func (st *structure) same(p *nlp.Problem) bool {
	return st.n == p.N && st.m == p.M &&
		slices.Equal(st.jacRow, p.JacRow) && slices.Equal(st.jacCol, p.JacCol) &&
		slices.Equal(st.hessRow, p.HessRow) && slices.Equal(st.hessCol, p.HessCol)
}

// analyse builds st for p. It allocates; it runs once per structure.
func (st *structure) analyse(p *nlp.Problem) {
	n, m := p.N, p.M
	*st = structure{n: n, m: m,
		jacRow: slices.Clone(p.JacRow), jacCol: slices.Clone(p.JacCol),
		hessRow: slices.Clone(p.HessRow), hessCol: slices.Clone(p.HessCol)}

	// Connected components of the Hessian graph (union–find with path halving).
	parent := make([]int32, n)
	for j := range parent {
		parent[j] = int32(j)
	}
	find := func(a int32) int32 {
		for parent[a] != a {
			parent[a] = parent[parent[a]]
			a = parent[a]
		}
		return a
	}
	for k := range p.HessRow {
		a, b := find(p.HessRow[k]), find(p.HessCol[k])
		if a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	st.linear = make([]bool, n)
	for j := range st.linear {
		st.linear[j] = true
	}
	for k := range p.HessRow {
		st.linear[p.HessRow[k]], st.linear[p.HessCol[k]] = false, false
	}
	st.varBlk = make([]int32, n)
	st.varLoc = make([]int32, n)
	rootBlk := make([]int32, n)
	for j := range rootBlk {
		rootBlk[j] = -1
	}
	var size []int32
	for j := range n {
		r := find(int32(j))
		if rootBlk[r] < 0 {
			rootBlk[r] = int32(st.nblk)
			st.nblk++
			size = append(size, 0)
		}
		b := rootBlk[r]
		st.varBlk[j] = b
		st.varLoc[j] = size[b]
		size[b]++
	}
	st.blkStart = make([]int32, st.nblk+1)
	for b := range st.nblk {
		st.blkStart[b+1] = st.blkStart[b] + size[b]
		st.maxBS = max(st.maxBS, int(size[b]))
	}
	st.blkVar = make([]int32, n)
	for j := range n {
		b := st.varBlk[j]
		st.blkVar[st.blkStart[b]+st.varLoc[j]] = int32(j)
	}

	// Rows touching each block.
	rowsOf := make([][]int32, st.nblk)
	for k := range p.JacRow {
		b := st.varBlk[p.JacCol[k]]
		rowsOf[b] = append(rowsOf[b], p.JacRow[k])
	}
	st.blkRowStart = make([]int32, st.nblk+1)
	for b := range st.nblk {
		slices.Sort(rowsOf[b])
		rowsOf[b] = slices.Compact(rowsOf[b])
		st.blkRowStart[b+1] = st.blkRowStart[b] + int32(len(rowsOf[b]))
		st.blkRow = append(st.blkRow, rowsOf[b]...)
		st.maxBR = max(st.maxBR, len(rowsOf[b]))
		if r := rowsOf[b]; len(r) > 1 {
			st.band = max(st.band, int(r[len(r)-1]-r[0]))
		}
	}

	st.hOff = make([]int32, st.nblk)
	st.jOff = make([]int32, st.nblk)
	for b := range st.nblk {
		bs := int(size[b])
		st.hOff[b] = int32(st.hLen)
		st.hLen += bs * bs
		st.jOff[b] = int32(st.jLen)
		st.jLen += len(rowsOf[b]) * bs
	}
	st.hessAt = make([]int32, len(p.HessRow))
	st.hessAtT = make([]int32, len(p.HessRow))
	for k := range p.HessRow {
		r, c := p.HessRow[k], p.HessCol[k]
		b := st.varBlk[r]
		bs := size[b]
		st.hessAt[k] = st.hOff[b] + st.varLoc[r]*bs + st.varLoc[c]
		st.hessAtT[k] = st.hOff[b] + st.varLoc[c]*bs + st.varLoc[r]
	}
	st.jacAt = make([]int32, len(p.JacRow))
	for k := range p.JacRow {
		j := p.JacCol[k]
		b := st.varBlk[j]
		lr, _ := slices.BinarySearch(rowsOf[b], p.JacRow[k])
		st.jacAt[k] = st.jOff[b] + int32(lr)*size[b] + st.varLoc[j]
	}
}

func (st *structure) blockSize(b int) int { return int(st.blkStart[b+1] - st.blkStart[b]) }

// block returns block b's size, the offset of its dense Hessian and its variables.
func (st *structure) block(b int) (bs, off int, vars []int32) {
	return st.blockSize(b), int(st.hOff[b]), st.blkVar[st.blkStart[b]:st.blkStart[b+1]]
}
