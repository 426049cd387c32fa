package policy

import (
	"math"

	"gbdmpc/gbd"
)

// Node feature layout, shared by variable and constraint nodes so that one ECC weight matrix serves
// both sides of the bipartite graph. With Arch.VarIndex, a variable node also carries a one-hot of its
// binary's index in the ny columns after baseFeatures; with Arch.CutCoefs, a cut node carries its
// coefficients, in binary order, in the ny columns after those.
const (
	featIsVar    = iota // 1 on a variable node, 0 on a cut node
	featPrev            // variable node: its value in the previous master iterate
	featRHS             // cut node: the cut's right-hand side, normalised per cut kind
	featIsFeas          // cut node: 1 for a feasibility cut, 0 for an optimality cut
	baseFeatures        // the paper's features
)

// nodeWidth is the node feature width for ny binaries.
func nodeWidth(a *Arch, ny int) int {
	w := baseFeatures
	if a.VarIndex {
		w += ny
	}
	if a.CutCoefs {
		w += ny
	}
	if a.CutAtPrev {
		w++
	}
	return w
}

// cutAtPrevClip bounds the CutAtPrev feature: an old cut far below the envelope says no more than
// one a few scales below it.
const cutAtPrevClip = 4

// cutCoefCol is the first column of the cut coefficients (Arch.CutCoefs).
func cutCoefCol(a *Arch, ny int) int {
	if a.VarIndex {
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

// Cut normalisations (Arch.CutNorm): how a master's cuts are scaled before the fitted Norm.
const (
	// CutNormKind is the fitted per-kind standardisation alone: each feature is centred and scaled by
	// statistics over all training masters. The v1 encoding, and the default.
	CutNormKind = ""
	// CutNormMaster first rescales each master by the symmetries of its own argmin: all optimality
	// cuts together by one shift and one positive scale (adding a constant to every φ_o, or scaling
	// them all, leaves argmin_y max_k φ_o(y) alone), each feasibility cut by its own positive scale
	// (φ_f ≤ 0 is the same set for c·φ_f, c > 0). Cut nodes then carry where a cut lies relative to the
	// others of its master, not the objective's scale of the parameter set it came from. The features
	// are still the paper's: right-hand sides, the type flag, coefficients.
	CutNormMaster = "master"
)

// cutMaps writes the affine map φ ↦ (φ − shift[k])/scale[k] of every cut under CutNormMaster:
// optimality cuts share shift = the mean of their constants and scale = the largest magnitude among
// their coefficients and centred constants; a feasibility cut has shift 0 and scale = the largest
// magnitude among its coefficients and constant. A zero scale (an all-zero cut) becomes 1.
func cutMaps(cuts []gbd.Cut, shift, scale []float64) {
	var sum float64
	var nopt int
	for k := range cuts {
		if cuts[k].Kind == gbd.OptimalityCut {
			sum += cuts[k].Const
			nopt++
		}
	}
	mean := sum / float64(max(nopt, 1))
	var optScale float64
	for k := range cuts {
		c := &cuts[k]
		m := 0.0
		for _, a := range c.Coef {
			m = math.Max(m, math.Abs(a))
		}
		if c.Kind == gbd.OptimalityCut {
			optScale = math.Max(optScale, math.Max(m, math.Abs(c.Const-mean)))
			continue
		}
		shift[k], scale[k] = 0, math.Max(m, math.Abs(c.Const))
		if !(scale[k] > 0) {
			scale[k] = 1
		}
	}
	if !(optScale > 0) {
		optScale = 1
	}
	for k := range cuts {
		if cuts[k].Kind == gbd.OptimalityCut {
			shift[k], scale[k] = mean, optScale
		}
	}
}

// cutMapper yields each cut's (shift, scale) under an Arch's cut normalisation, reusing its storage.
type cutMapper struct{ shift, scale []float64 }

func (m *cutMapper) maps(cuts []gbd.Cut, mode string) (shift, scale []float64) {
	m.shift, m.scale = grow(m.shift, len(cuts)), grow(m.scale, len(cuts))
	if mode == CutNormMaster {
		cutMaps(cuts, m.shift, m.scale)
	} else {
		for k := range cuts {
			m.shift[k], m.scale[k] = 0, 1
		}
	}
	return m.shift, m.scale
}

// FitNorm computes the mean and standard deviation of every cut's right-hand side and of every non-zero
// coefficient (the edge features), per cut kind, over all cuts of all samples, after the arch's cut
// normalisation. A kind that never occurs, or has no spread, gets mean 0 / std 1 or std 1, so
// normalisation never divides by zero.
func FitNorm(samples []Sample, arch Arch) Norm {
	var n, sr, sr2, nc, sc, sc2 [2]float64
	var cm cutMapper
	for i := range samples {
		shift, scale := cm.maps(samples[i].Cuts, arch.CutNorm)
		for k := range samples[i].Cuts {
			c := &samples[i].Cuts[k]
			t := c.Kind & 1
			r := -(c.Const - shift[k]) / scale[k]
			n[t]++
			sr[t] += r
			sr2[t] += r * r
			for _, a := range c.Coef {
				if a != 0 {
					a /= scale[k]
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
	atPrev  []float64 // scratch: each cut's value at prev (Arch.CutAtPrev)
	cm      cutMapper
}

// encode fills g from the cuts and previous iterate, reusing g's storage: once g has seen a master
// problem at least as large, encode does not allocate. Inputs are assumed validated (coefficient lengths
// equal len(prev)). Of arch only the encoding fields (VarIndex, CutCoefs, CutAtPrev, CutNorm) are read.
func (g *graph) encode(cuts []gbd.Cut, prev []float64, nm *Norm, arch *Arch) {
	varIndex := arch.VarIndex
	shift, scale := g.cm.maps(cuts, arch.CutNorm)
	nvar := len(prev)
	n := nvar + len(cuts)
	nf := nodeWidth(arch, nvar)
	coefCol := cutCoefCol(arch, nvar)
	g.nvar, g.n, g.nf = nvar, n, nf
	envelope := math.Inf(-1) // max over the optimality cuts at prev (CutAtPrev)
	if arch.CutAtPrev {
		g.atPrev = grow(g.atPrev, len(cuts))
		for k := range cuts {
			// The affine part, the one a decision log or dataset keeps (their cuts lose the
			// stage tables and the hinges' definitions), so that a policy sees at inference
			// what it was trained on.
			g.atPrev[k] = cuts[k].Affine(prev)
			if cuts[k].Kind == gbd.OptimalityCut {
				envelope = math.Max(envelope, g.atPrev[k])
			}
		}
	}
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
		row[featRHS] = (-(c.Const-shift[k])/scale[k] - nm.RHSMean[t]) / nm.RHSStd[t]
		if c.Kind == gbd.FeasibilityCut {
			row[featIsFeas] = 1
		}
		if arch.CutCoefs {
			// Scaled like the edge features but not centred, so an absent coefficient stays 0.
			for i, a := range c.Coef {
				row[coefCol+i] = a / scale[k] / nm.CoefStd[t]
			}
		}
		if arch.CutAtPrev {
			v := g.atPrev[k]
			if c.Kind == gbd.OptimalityCut {
				v -= envelope
			}
			row[nf-1] = math.Max(-cutAtPrevClip, math.Min(cutAtPrevClip, v/scale[k]))
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
			e := (a/scale[k] - nm.CoefMean[t]) / nm.CoefStd[t]
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
