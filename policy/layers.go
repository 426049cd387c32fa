package policy

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// The three layer types of the network, each as a forward and a backward function over flat row-major
// buffers owned by the caller. Backward functions accumulate parameter gradients (+=) so that one
// buffer can collect a whole sample, and overwrite input gradients.

var impl gonum.Implementation

// eccBlocks is the number of in×out blocks in an ECC layer's weight matrix
// W = [W_1 … W_E | B | W_root]: one per edge feature, the edge network's bias kernel, and the root weight.
const eccBlocks = edgeFeatures + 2

// eccForward computes hout = ReLU(z) for one ECC layer (Simonovsky & Komodakis), where for node i
//
//	z_i = b + W_rootᵀ h_i + Σ_{j∈N(i)} Θ(e_ij)ᵀ h_j,   Θ(e) = Σ_k e_k W_k + B.
//
// Because the edge network is linear, Σ_j Θ(e_ij)ᵀ h_j = Σ_k W_kᵀ (Σ_j e_ij,k h_j) + Bᵀ Σ_j h_j, so no
// per-edge kernel is ever formed. We go one step further and transform before aggregating: one GEMM
// P = H·W (n × in times in × eccBlocks·out) gives every node's h W_k, h B and h W_root, and the sparse
// aggregation then sums rows of P. It is the same arithmetic as aggregating first, but the GEMM's left
// operand is the previous layer's ReLU output, whose zeros gonum skips, where the aggregated sums would
// be dense. p (n × eccBlocks·out) is scratch; z keeps the pre-activation for the backward pass.
func eccForward(g *graph, h []float64, in, out int, w, b, p, z, hout []float64) {
	n := g.n
	pw := eccBlocks * out
	matMul(n, in, pw, h, w, p)
	for i := 0; i < n; i++ {
		zi := z[i*out : (i+1)*out]
		root := p[i*pw+(edgeFeatures+1)*out : (i+1)*pw]
		for c := range zi {
			zi[c] = b[c] + root[c]
		}
		for q := g.ptr[i]; q < g.ptr[i+1]; q++ {
			pj := p[int(g.adj[q])*pw : (int(g.adj[q])+1)*pw]
			for k := 0; k < edgeFeatures; k++ {
				impl.Daxpy(out, g.ef[int(q)*edgeFeatures+k], pj[k*out:(k+1)*out], 1, zi, 1)
			}
			impl.Daxpy(out, 1, pj[edgeFeatures*out:(edgeFeatures+1)*out], 1, zi, 1)
		}
	}
	relu(z[:n*out], hout[:n*out])
}

// eccBackward takes dh = ∂L/∂hout (n × out, overwritten with ∂L/∂z), adds ∂L/∂W and ∂L/∂b to dw and db,
// and, when dhin is not nil, writes ∂L/∂h into dhin. h is the layer's input and dp (n × eccBlocks·out)
// scratch for ∂L/∂P. Every edge is stored in both directions with the same feature, so ∂L/∂P is a gather
// over each node's own neighbours, like the forward pass.
func eccBackward(g *graph, in, out int, w, h, z, dh, dw, db, dp, dhin []float64) {
	n := g.n
	pw := eccBlocks * out
	reluBackward(z[:n*out], dh[:n*out])
	for j := 0; j < n; j++ {
		row := dp[j*pw : (j+1)*pw]
		clear(row[:(edgeFeatures+1)*out])
		copy(row[(edgeFeatures+1)*out:], dh[j*out:(j+1)*out])
		for c, v := range dh[j*out : (j+1)*out] {
			db[c] += v
		}
		for q := g.ptr[j]; q < g.ptr[j+1]; q++ {
			di := dh[int(g.adj[q])*out : (int(g.adj[q])+1)*out]
			for k := 0; k < edgeFeatures; k++ {
				impl.Daxpy(out, g.ef[int(q)*edgeFeatures+k], di, 1, row[k*out:(k+1)*out], 1)
			}
			impl.Daxpy(out, 1, di, 1, row[edgeFeatures*out:(edgeFeatures+1)*out], 1)
		}
	}
	matTMulAdd(n, in, pw, h, dp, dw)
	if dhin != nil {
		matMulT(n, in, pw, dp, w, dhin)
	}
}

// The three products of an ECC layer, written out rather than left to Dgemm because their shapes are
// extreme: a handful of nodes against a weight matrix (in × eccBlocks·out, ~100 KB at width 64) that
// does not fit in L1. Dgemm's row-by-row order streams the whole weight matrix once per node; these
// loops keep one weight row hot while sweeping the (small) node dimension, which makes inference about
// twice as fast. Zero inputs (ReLU outputs, one-hot node features) are skipped.

// matMul sets P = H·W for H n×in, W in×pw.
func matMul(n, in, pw int, h, w, p []float64) {
	clear(p[:n*pw])
	for l := 0; l < in; l++ {
		wl := w[l*pw : (l+1)*pw]
		for i := 0; i < n; i++ {
			if v := h[i*in+l]; v != 0 {
				impl.Daxpy(pw, v, wl, 1, p[i*pw:(i+1)*pw], 1)
			}
		}
	}
}

// matTMulAdd adds Hᵀ·D to G for H n×in, D n×pw, G in×pw.
func matTMulAdd(n, in, pw int, h, d, g []float64) {
	for l := 0; l < in; l++ {
		gl := g[l*pw : (l+1)*pw]
		for i := 0; i < n; i++ {
			if v := h[i*in+l]; v != 0 {
				impl.Daxpy(pw, v, d[i*pw:(i+1)*pw], 1, gl, 1)
			}
		}
	}
}

// matMulT sets X = D·Wᵀ for D n×pw, W in×pw, X n×in.
func matMulT(n, in, pw int, d, w, x []float64) {
	for l := 0; l < in; l++ {
		wl := w[l*pw : (l+1)*pw]
		for i := 0; i < n; i++ {
			x[i*in+l] = impl.Ddot(pw, d[i*pw:(i+1)*pw], 1, wl, 1)
		}
	}
}

// sumPool is the readout: the graph embedding is the sum of all node embeddings (n × width).
func sumPool(n, width int, h, pooled []float64) {
	clear(pooled[:width])
	for i := 0; i < n; i++ {
		for c, v := range h[i*width : (i+1)*width] {
			pooled[c] += v
		}
	}
}

// sumPoolBackward broadcasts the pooled gradient to every node.
func sumPoolBackward(n, width int, dpooled, dh []float64) {
	for i := 0; i < n; i++ {
		copy(dh[i*width:(i+1)*width], dpooled[:width])
	}
}

// denseForward computes z = Wᵀa + b (W is in × out, row-major) and, when act is set, a' = ReLU(z).
func denseForward(in, out int, w, b, a, z, aout []float64, act bool) {
	copy(z[:out], b)
	impl.Dgemv(blas.Trans, in, out, 1, w, out, a, 1, 1, z, 1)
	if act {
		relu(z[:out], aout[:out])
	}
}

// denseBackward takes dz (∂L/∂a' when act, overwritten with ∂L/∂z), adds ∂L/∂W, ∂L/∂b and, when da is
// not nil, writes ∂L/∂a.
func denseBackward(in, out int, w, a, z, dz, dw, db, da []float64, act bool) {
	if act {
		reluBackward(z[:out], dz[:out])
	}
	impl.Dger(in, out, 1, a, 1, dz, 1, dw, out)
	for c, v := range dz[:out] {
		db[c] += v
	}
	if da != nil {
		impl.Dgemv(blas.NoTrans, in, out, 1, w, out, dz, 1, 0, da, 1)
	}
}

func relu(z, h []float64) {
	for i, v := range z {
		h[i] = max(v, 0)
	}
}

// reluBackward zeroes the gradient where the unit was inactive. The derivative at exactly 0 is taken as
// 0, matching relu's forward choice of max(v, 0).
func reluBackward(z, d []float64) {
	for i, v := range z {
		if v <= 0 {
			d[i] = 0
		}
	}
}
