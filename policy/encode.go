package policy

import (
	"math"

	"gbdmpc/gbd"
)

// Node feature layout, shared by variable and constraint nodes so that one ECC weight matrix serves
// both sides of the bipartite graph. With Arch.VarIndex, a variable node also carries a one-hot of its
// binary's index in the columns after baseFeatures.
const (
	featIsVar    = iota // 1 on a variable node, 0 on a cut node
	featPrev            // variable node: its value in the previous master iterate
	featRHS             // cut node: the cut's right-hand side, normalised per cut kind
	featIsFeas          // cut node: 1 for a feasibility cut, 0 for an optimality cut
	baseFeatures        // the paper's features
)

// nodeWidth is the node feature width for ny binaries.
func nodeWidth(varIndex bool, ny int) int {
	if varIndex {
		return baseFeatures + ny
	}
	return baseFeatures
}

// edgeFeatures is the width of an edge feature vector: the (normalised) coefficient of the binary in
// the cut.
const edgeFeatures = 1

// Norm holds the affine normalisation of the graph's real-valued features, fitted on training data and
// stored in the policy file. Statistics are kept per cut kind (index gbd.CutKind) because optimality
// cuts carry objective-scale numbers while feasibility cuts carry constraint-violation-scale numbers;
// pooled together, the feasibility cuts would all collapse to one value.
type Norm struct {
	RHSMean  [2]float64 `json:"rhs_mean"`
	RHSStd   [2]float64 `json:"rhs_std"`
	CoefMean [2]float64 `json:"coef_mean"`
	CoefStd  [2]float64 `json:"coef_std"`
}

// identityNorm leaves features unchanged.
func identityNorm() Norm {
	return Norm{RHSStd: [2]float64{1, 1}, CoefStd: [2]float64{1, 1}}
}

// FitNorm computes the mean and standard deviation of every cut's right-hand side and of every non-zero
// coefficient (the edge features), per cut kind, over all cuts of all samples. A kind that never occurs,
// or has no spread, gets mean 0 / std 1 or std 1, so normalisation never divides by zero.
func FitNorm(samples []Sample) Norm {
	var n, sr, sr2, nc, sc, sc2 [2]float64
	for i := range samples {
		for k := range samples[i].Cuts {
			c := &samples[i].Cuts[k]
			t := c.Kind & 1
			r := c.RHS()
			n[t]++
			sr[t] += r
			sr2[t] += r * r
			for _, a := range c.Coef {
				if a != 0 {
					nc[t]++
					sc[t] += a
					sc2[t] += a * a
				}
			}
		}
	}
	nm := identityNorm()
	for t := 0; t < 2; t++ {
		nm.RHSMean[t], nm.RHSStd[t] = meanStd(n[t], sr[t], sr2[t])
		nm.CoefMean[t], nm.CoefStd[t] = meanStd(nc[t], sc[t], sc2[t])
	}
	return nm
}

func meanStd(n, s, s2 float64) (mean, std float64) {
	if n == 0 {
		return 0, 1
	}
	mean = s / n
	v := s2/n - mean*mean
	std = math.Sqrt(math.Max(v, 0))
	if !(std > 1e-12) || math.IsInf(std, 0) {
		std = 1
	}
	return mean, std
}

func (nm *Norm) valid() bool {
	for t := 0; t < 2; t++ {
		for _, v := range [...]float64{nm.RHSMean[t], nm.RHSStd[t], nm.CoefMean[t], nm.CoefStd[t]} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
		if !(nm.RHSStd[t] > 0) || !(nm.CoefStd[t] > 0) {
			return false
		}
	}
	return true
}

// graph is the bipartite encoding of one master problem. Nodes 0..nvar-1 are the binaries, nodes
// nvar..n-1 the cuts in the order given. Adjacency is stored as CSR over nodes with every edge present in
// both directions, so one aggregation loop serves variable→cut and cut→variable messages.
type graph struct {
	nvar, n int
	nf      int       // node feature width
	x       []float64 // n × nf
	ptr     []int32   // n+1 offsets into adj/ef
	adj     []int32   // neighbour of each edge slot
	ef      []float64 // edge slot × edgeFeatures
	cursor  []int32   // scratch for filling adj
}

// encode fills g from the cuts and previous iterate, reusing g's storage: once g has seen a master
// problem at least as large, encode does not allocate. Inputs are assumed validated (coefficient lengths
// equal len(prev)).
func (g *graph) encode(cuts []gbd.Cut, prev []float64, nm *Norm, varIndex bool) {
	nvar := len(prev)
	n := nvar + len(cuts)
	nf := nodeWidth(varIndex, nvar)
	g.nvar, g.n, g.nf = nvar, n, nf
	g.x = grow(g.x, n*nf)
	clear(g.x)
	for i, v := range prev {
		g.x[i*nf+featIsVar] = 1
		g.x[i*nf+featPrev] = v
		if varIndex {
			g.x[i*nf+baseFeatures+i] = 1
		}
	}
	g.ptr = growInt32(g.ptr, n+1)
	g.cursor = growInt32(g.cursor, n)
	clear(g.cursor)
	for k := range cuts {
		c := &cuts[k]
		t := c.Kind & 1
		row := g.x[(nvar+k)*nf:]
		row[featRHS] = (c.RHS() - nm.RHSMean[t]) / nm.RHSStd[t]
		if c.Kind == gbd.FeasibilityCut {
			row[featIsFeas] = 1
		}
		for i, a := range c.Coef {
			if a != 0 {
				g.cursor[i]++
				g.cursor[nvar+k]++
			}
		}
	}
	g.ptr[0] = 0
	for i := 0; i < n; i++ {
		g.ptr[i+1] = g.ptr[i] + g.cursor[i]
		g.cursor[i] = g.ptr[i]
	}
	nnz := int(g.ptr[n])
	g.adj = growInt32(g.adj, nnz)
	g.ef = grow(g.ef, nnz*edgeFeatures)
	for k := range cuts {
		c := &cuts[k]
		t := c.Kind & 1
		ck := int32(nvar + k)
		for i, a := range c.Coef {
			if a == 0 {
				continue
			}
			e := (a - nm.CoefMean[t]) / nm.CoefStd[t]
			p := g.cursor[i]
			g.adj[p], g.ef[p] = ck, e
			g.cursor[i]++
			p = g.cursor[ck]
			g.adj[p], g.ef[p] = int32(i), e
			g.cursor[ck]++
		}
	}
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
