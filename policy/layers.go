package policy

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// The three layer types of the network, each as a forward and a backward function over flat row-major
// buffers owned by the caller. Backward functions accumulate parameter gradients (+=) so that one
// buffer can collect a whole sample, and overwrite input gradients.

var impl gonum.Implementation

// eccBlocks is the number of in×out blocks in an ECC layer's weight matrix W = [W_1 … W_E | B | W_root]
// with the linear kernel network: one per edge feature, the edge network's bias kernel, and the root
// weight. With a hidden kernel layer of H units the E edge blocks become H (eccWidth).
const eccBlocks = edgeFeatures + 2

// eccForward computes hout = ReLU(z) for one ECC layer (Simonovsky & Komodakis), where for node i
//
//	z_i = b + W_rootᵀ h_i + Σ_{j∈N(i)} Θ(e_ij)ᵀ h_j,   Θ(e) = Σ_k ψ_k(e) W_k + B.
//
// ψ(e) is what the kernel network makes of the edge: the edge features themselves (the linear kernel
// network of Spektral's default, ψ(e) = e), or the ReLU units of a hidden layer (kernelForward). Θ is
// linear in ψ, so Σ_j Θ(e_ij)ᵀ h_j = Σ_k W_kᵀ (Σ_j ψ_k(e_ij) h_j) + Bᵀ Σ_j h_j, and no per-edge kernel is
// ever formed. We go one step further and transform before aggregating: one GEMM P = H·W (n × in times
// in × (ne+2)·out) gives every node's h W_k, h B and h W_root, and the sparse aggregation then sums rows
// of P. It is the same arithmetic as aggregating first, but the GEMM's left operand is the previous
// layer's ReLU output, whose zeros gonum skips, where the aggregated sums would be dense. psi holds ne
// values per edge slot; p (n × (ne+2)·out) receives P; z keeps the pre-activation for the backward pass.
//
// With mean set (Arch.Aggr = AggrMean, not in the paper), node i's neighbour sum is divided by its
// degree, so that a binary's state does not grow with the number of cuts in the master.
func eccForward(g *graph, psi []float64, ne int, h []float64, in, out int, w, b, p, z, hout []float64, mean bool) {
	n := g.n
	pw := (ne + 2) * out
	matMul(n, in, pw, h, w, p)
	for i := 0; i < n; i++ {
		zi := z[i*out : (i+1)*out]
		root := p[i*pw+(ne+1)*out : (i+1)*pw]
		for c := range zi {
			zi[c] = b[c] + root[c]
		}
		alpha := g.weight(i, mean)
		for q := g.ptr[i]; q < g.ptr[i+1]; q++ {
			pj := p[int(g.adj[q])*pw : (int(g.adj[q])+1)*pw]
			for k := 0; k < ne; k++ {
				impl.Daxpy(out, alpha*psi[int(q)*ne+k], pj[k*out:(k+1)*out], 1, zi, 1)
			}
			impl.Daxpy(out, alpha, pj[ne*out:(ne+1)*out], 1, zi, 1)
		}
	}
	relu(z[:n*out], hout[:n*out])
}

// eccBackward takes dh = ∂L/∂hout (n × out, overwritten with ∂L/∂z), adds ∂L/∂W and ∂L/∂b to dw and db,
// and, when dhin is not nil, writes ∂L/∂h into dhin. h is the layer's input and dp (n × (ne+2)·out)
// scratch for ∂L/∂P. Every edge is stored in both directions with the same feature, so ∂L/∂P is a gather
// over each node's own neighbours, like the forward pass. When dpsi is not nil it also adds ∂L/∂ψ for
// every edge slot, which needs the forward pass's P (pf): the hidden kernel layer's gradient. A slot
// stands for its reverse too (same edge, same ψ), so each message's gradient lands once.
func eccBackward(g *graph, psi []float64, ne, in, out int, w, h, z, dh, dw, db, dp, dhin, pf, dpsi []float64, mean bool) {
	n := g.n
	pw := (ne + 2) * out
	reluBackward(z[:n*out], dh[:n*out])
	for j := 0; j < n; j++ {
		row := dp[j*pw : (j+1)*pw]
		clear(row[:(ne+1)*out])
		copy(row[(ne+1)*out:], dh[j*out:(j+1)*out])
		for c, v := range dh[j*out : (j+1)*out] {
			db[c] += v
		}
		for q := g.ptr[j]; q < g.ptr[j+1]; q++ {
			i := int(g.adj[q])
			di := dh[i*out : (i+1)*out]
			alpha := g.weight(i, mean) // the receiver's normalisation
			for k := 0; k < ne; k++ {
				impl.Daxpy(out, alpha*psi[int(q)*ne+k], di, 1, row[k*out:(k+1)*out], 1)
				if dpsi != nil {
					dpsi[int(q)*ne+k] += alpha * impl.Ddot(out, pf[j*pw+k*out:j*pw+(k+1)*out], 1, di, 1)
				}
			}
			impl.Daxpy(out, alpha, di, 1, row[ne*out:(ne+1)*out], 1)
		}
	}
	matTMulAdd(n, in, pw, h, dp, dw)
	if dhin != nil {
		matMulT(n, in, pw, dp, w, dhin)
	}
}

// kernelForward runs the hidden layer of the ECC kernel network on every edge slot (Arch.Kernel):
// psi = ReLU(pre), pre = c + Uᵀ e, with e the slot's edge features (E values), U an E×H matrix.
func kernelForward(nnz int, ef []float64, u, c, pre, psi []float64) {
	hid := len(c)
	for q := 0; q < nnz; q++ {
		pq := pre[q*hid : (q+1)*hid]
		copy(pq, c)
		for k := 0; k < edgeFeatures; k++ {
			impl.Daxpy(hid, ef[q*edgeFeatures+k], u[k*hid:(k+1)*hid], 1, pq, 1)
		}
	}
	relu(pre[:nnz*hid], psi[:nnz*hid])
}

// kernelBackward takes dpsi = ∂L/∂psi (overwritten with ∂L/∂pre) and adds ∂L/∂U and ∂L/∂c.
func kernelBackward(nnz int, ef, pre, dpsi, du, dc []float64) {
	hid := len(dc)
	reluBackward(pre[:nnz*hid], dpsi[:nnz*hid])
	for q := 0; q < nnz; q++ {
		dq := dpsi[q*hid : (q+1)*hid]
		for k := 0; k < edgeFeatures; k++ {
			impl.Daxpy(hid, ef[q*edgeFeatures+k], dq, 1, du[k*hid:(k+1)*hid], 1)
		}
		impl.Daxpy(hid, 1, dq, 1, dc, 1)
	}
}

// weight is the factor of node i's neighbour sum: 1, or 1/degree with mean aggregation.
func (g *graph) weight(i int, mean bool) float64 {
	if d := g.ptr[i+1] - g.ptr[i]; mean && d > 0 {
		return 1 / float64(d)
	}
	return 1
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

// maxPool writes each channel's maximum over the n nodes into pooled and the node holding it (the
// first on ties) into arg. With no node the maximum is 0, as an empty sum is.
func maxPool(n, width int, h, pooled []float64, arg []int32) {
	for c := 0; c < width; c++ {
		best, at := 0.0, int32(-1)
		for i := 0; i < n; i++ {
			if v := h[i*width+c]; at < 0 || v > best {
				best, at = v, int32(i)
			}
		}
		pooled[c], arg[c] = best, at
	}
}

// maxPoolBackward adds each channel's pooled gradient to the node that held its maximum.
func maxPoolBackward(width int, dpooled []float64, arg []int32, dh []float64) {
	for c := 0; c < width; c++ {
		if arg[c] >= 0 {
			dh[int(arg[c])*width+c] += dpooled[c]
		}
	}
}

// sumPoolBackward adds the pooled gradient to every node's.
func sumPoolBackward(n, width int, dpooled, dh []float64) {
	for i := 0; i < n; i++ {
		for c, v := range dpooled[:width] {
			dh[i*width+c] += v
		}
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
