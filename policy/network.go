package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Arch is the network's shape. The zero value is the paper's: three ECC layers of 64 units and dense
// layers of 64 and 32. A nil Dense means the default; an empty non-nil Dense means no hidden dense
// layer (the output layer reads the pooled embedding directly).
type Arch struct {
	ECC   []int `json:"ecc"`
	Dense []int `json:"dense"`
	// VarIndex adds a one-hot of the binary's index to each variable node's features. It is not in the
	// paper: with the paper's features alone the network is invariant to permuting the binaries (sum
	// pooling forgets which node is which), so it can tell binaries apart only by the cut coefficients
	// they carry. Off by default.
	VarIndex bool `json:"var_index,omitempty"`
	// CutCoefs gives each cut node its own coefficients as node features, in binary order, besides
	// the edges that carry them (not in the paper). With them a cut node can evaluate itself at any
	// assignment in its first layer, without learning which neighbour is which binary.
	CutCoefs bool `json:"cut_coefs,omitempty"`
	// CutAtPrev gives each cut node its value at the previous master iterate y^k (not in the paper):
	// an optimality cut's distance below the envelope max_j φ_j(y^k), a feasibility cut's own value,
	// both in the cut normalisation's scale. It tells the network which cuts are active where the
	// master stands, which the right-hand side alone does not.
	CutAtPrev bool `json:"cut_at_prev,omitempty"`
	// CutNorm is how a master's cuts are scaled before the fitted Norm: CutNormKind ("", the
	// default) or CutNormMaster (see encode.go).
	CutNorm string `json:"cut_norm,omitempty"`
	// Pool is the readout: PoolSum ("", the paper's global sum pooling) or PoolSumMax (the sum and
	// the per-channel maximum over nodes, concatenated; not in the paper).
	Pool string `json:"pool,omitempty"`
	// Aggr is how an ECC layer combines a node's neighbours: AggrSum ("", the ECC of the paper) or
	// AggrMean (the sum divided by the node's degree; not in the paper).
	Aggr string `json:"aggr,omitempty"`
	// Kernel is the width of the hidden ReLU layer of each ECC layer's kernel network, the network
	// that maps an edge's features to its in×out kernel. 0 (the default) is a linear kernel network,
	// Spektral's default, which the paper does not change.
	Kernel int `json:"kernel,omitempty"`
	// PoolAll reads out every ECC layer's node states, each pooled as Pool says, concatenated
	// ("jumping knowledge", Xu et al. 2018; not in the paper), instead of the last layer's only.
	PoolAll bool `json:"pool_all,omitempty"`
	// PerNode makes the head score each binary from its own variable node (not in the paper): the
	// dense layers, shared by all binaries, read the node's last-layer state beside the readout and
	// give one output, the binary's logit. The readout alone (the default) gives all the logits from
	// one pooled vector, in which a binary is only an output position. Only for one output per
	// binary (the independent and structured variants).
	PerNode bool `json:"per_node,omitempty"`
}

// Neighbour aggregations (Arch.Aggr).
const (
	AggrSum  = ""
	AggrMean = "mean"
)

// Readouts (Arch.Pool).
const (
	PoolSum    = ""
	PoolSumMax = "summax"
)

// Limits that keep a hostile or corrupt policy file from asking for absurd allocations.
const (
	maxLayers = 16
	maxWidth  = 4096
)

func (a Arch) resolved() Arch {
	r := Arch{ECC: slices.Clone(a.ECC), Dense: slices.Clone(a.Dense), VarIndex: a.VarIndex, CutCoefs: a.CutCoefs, CutAtPrev: a.CutAtPrev, CutNorm: a.CutNorm, Pool: a.Pool, Aggr: a.Aggr, Kernel: a.Kernel, PoolAll: a.PoolAll, PerNode: a.PerNode}
	if len(a.ECC) == 0 {
		r.ECC = []int{64, 64, 64}
	}
	if a.Dense == nil {
		r.Dense = []int{64, 32}
	}
	return r
}

func (a Arch) validate() error {
	if len(a.ECC) == 0 || len(a.ECC) > maxLayers || len(a.Dense) > maxLayers {
		return fmt.Errorf("architecture: need 1..%d ECC layers and at most %d dense layers, got %d and %d",
			maxLayers, maxLayers, len(a.ECC), len(a.Dense))
	}
	if a.Kernel < 0 || a.Kernel > 256 {
		return fmt.Errorf("architecture: kernel network width %d outside 0..256", a.Kernel)
	}
	if a.Aggr != AggrSum && a.Aggr != AggrMean {
		return fmt.Errorf("architecture: unknown aggregation %q (want %q or %q)", a.Aggr, AggrSum, AggrMean)
	}
	if a.Pool != PoolSum && a.Pool != PoolSumMax {
		return fmt.Errorf("architecture: unknown readout %q (want %q or %q)", a.Pool, PoolSum, PoolSumMax)
	}
	if a.CutNorm != CutNormKind && a.CutNorm != CutNormMaster {
		return fmt.Errorf("architecture: unknown cut normalisation %q (want %q or %q)", a.CutNorm, CutNormKind, CutNormMaster)
	}
	for _, w := range append(append([]int(nil), a.ECC...), a.Dense...) {
		if w <= 0 || w > maxWidth {
			return fmt.Errorf("architecture: layer width %d outside 1..%d", w, maxWidth)
		}
	}
	return nil
}

// tensor names one parameter block inside the flat parameter vector.
type tensor struct {
	name       string
	rows, cols int
	off        int
}

func (t tensor) size() int { return t.rows * t.cols }

// layout places every weight and bias in one flat vector, so that Adam, gradient buffers and their
// deterministic reduction all work on plain slices, and freezing the graph layers is a sub-range: the
// head (dense and output layers) occupies [head, size).
type layout struct {
	arch  Arch
	nf    int // node feature width
	ny    int
	nout  int
	eccIn []int // input width of each ECC layer
	ne    int   // kernel-network values per edge slot: edgeFeatures, or Arch.Kernel hidden units
	ecc   []tensor
	eccB  []tensor
	eccU  []tensor // hidden kernel layer (Arch.Kernel > 0): weights, edgeFeatures × Kernel
	eccC  []tensor // and biases, 1 × Kernel
	denIn []int    // input width of each dense layer; the last entry is the output layer
	den   []tensor
	denB  []tensor
	head  int
	size  int
	all   []tensor
}

func newLayout(arch Arch, ny, nout int) (*layout, error) {
	if err := arch.validate(); err != nil {
		return nil, err
	}
	if nout <= 0 || nout > 1<<16 {
		return nil, fmt.Errorf("architecture: %d outputs", nout)
	}
	if arch.PerNode && nout != ny {
		return nil, fmt.Errorf("architecture: a per-node head gives one output per binary (%d), not %d", ny, nout)
	}
	l := &layout{arch: arch, nf: nodeWidth(&arch, ny), ny: ny, nout: nout}
	add := func(name string, rows, cols int) tensor {
		t := tensor{name: name, rows: rows, cols: cols, off: l.size}
		l.size += rows * cols
		l.all = append(l.all, t)
		return t
	}
	in := l.nf
	l.ne = edgeFeatures
	if arch.Kernel > 0 {
		l.ne = arch.Kernel
	}
	for i, w := range arch.ECC {
		l.eccIn = append(l.eccIn, in)
		if arch.Kernel > 0 {
			l.eccU = append(l.eccU, add(fmt.Sprintf("ecc%d.U", i), edgeFeatures, arch.Kernel))
			l.eccC = append(l.eccC, add(fmt.Sprintf("ecc%d.c", i), 1, arch.Kernel))
		}
		l.ecc = append(l.ecc, add(fmt.Sprintf("ecc%d.W", i), in, (l.ne+2)*w))
		l.eccB = append(l.eccB, add(fmt.Sprintf("ecc%d.b", i), 1, w))
		in = w
	}
	in = l.pooledWidth()
	last := nout
	if arch.PerNode {
		in += arch.ECC[len(arch.ECC)-1]
		last = 1
	}
	l.head = l.size
	widths := append(append([]int(nil), arch.Dense...), last)
	for i, w := range widths {
		name := fmt.Sprintf("dense%d", i)
		if i == len(widths)-1 {
			name = "out"
		}
		l.denIn = append(l.denIn, in)
		l.den = append(l.den, add(name+".W", in, w))
		l.denB = append(l.denB, add(name+".b", 1, w))
		in = w
	}
	return l, nil
}

// pooled reports whether ECC layer i is read out, and where its part of the readout starts: the
// layers read out (the last, or all with PoolAll) each take their width, twice it with PoolSumMax
// (sums first, then maxima), in layer order.
func (l *layout) pooled(i int) (ok bool, off int) {
	last := len(l.arch.ECC) - 1
	if !l.arch.PoolAll && i != last {
		return false, 0
	}
	f := 1
	if l.arch.Pool == PoolSumMax {
		f = 2
	}
	if l.arch.PoolAll {
		for k := 0; k < i; k++ {
			off += f * l.arch.ECC[k]
		}
	}
	return true, off
}

// pooledWidth is the width of the readout.
func (l *layout) pooledWidth() int {
	last := len(l.arch.ECC) - 1
	_, off := l.pooled(last)
	if l.arch.Pool == PoolSumMax {
		return off + 2*l.arch.ECC[last]
	}
	return off + l.arch.ECC[last]
}

// headWidth is the width of what the graph layers hand the head: the readout, then with PerNode
// the variable nodes' last-layer states (ny rows of the last ECC width).
func (l *layout) headWidth() int {
	if l.arch.PerNode {
		return l.pooledWidth() + l.ny*l.arch.ECC[len(l.arch.ECC)-1]
	}
	return l.pooledWidth()
}

func (l *layout) view(p []float64, t tensor) []float64 { return p[t.off : t.off+t.size()] }

// initParams draws every weight Glorot-uniform, as the Keras/Spektral layers the paper used do by
// default, and starts biases at zero. For an ECC layer that means: the edge kernels W_k are the weight of
// a linear edge network from E inputs to in·out outputs, hence a tiny limit √(6/(E+in·out)); the edge
// network's bias B starts at zero; W_root is an ordinary in×out kernel. Starting messages small matters
// here: with sum aggregation and sum pooling, larger edge kernels multiply the activations by roughly
// the node degree at every layer and the initial logits reach the hundreds.
func (l *layout) initParams(rng *rand.Rand) []float64 {
	p := make([]float64, l.size)
	glorot := func(w []float64, fanIn, fanOut int) {
		lim := math.Sqrt(6 / float64(fanIn+fanOut))
		for i := range w {
			w[i] = lim * (2*rng.Float64() - 1)
		}
	}
	for i, t := range l.ecc {
		if l.arch.Kernel > 0 {
			glorot(l.view(p, l.eccU[i]), edgeFeatures, l.arch.Kernel)
		}
		in, out := t.rows, t.cols/(l.ne+2)
		w := l.view(p, t)
		for r := 0; r < in; r++ {
			row := w[r*t.cols : (r+1)*t.cols]
			glorot(row[:l.ne*out], l.ne, in*out)
			glorot(row[(l.ne+1)*out:], in, out)
		}
	}
	for _, t := range l.den {
		glorot(l.view(p, t), t.rows, t.cols)
	}
	return p
}

// workspace holds one sample's activations and backward scratch. Its buffers grow to the largest graph
// seen and are then reused, which is what makes inference allocation-free after warm-up.
type workspace struct {
	z, h [][]float64 // per ECC layer: pre-activation, output
	p    []float64   // ECC transform scratch, forward ∂L/∂P backward
	// With a hidden kernel layer, per ECC layer: its pre-activations and units on every edge slot,
	// and the forward P, which the kernel's gradient needs; dpsi is backward scratch.
	kpre, kpsi, pf [][]float64
	dpsi           []float64
	pooled         []float64   // the head's input (layout.headWidth): the readout first
	argmax         []int32     // PoolSumMax: the node holding each channel's maximum
	act, pre       [][]float64 // per dense layer (output last): input activation, pre-activation; ny rows with PerNode
	dh, dh2        []float64
	dv, dv2        []float64
	dhead          []float64 // PerNode: ∂L/∂(head input)
}

func newWorkspace(l *layout) *workspace {
	ws := &workspace{
		z: make([][]float64, len(l.ecc)), h: make([][]float64, len(l.ecc)),
		kpre: make([][]float64, len(l.ecc)), kpsi: make([][]float64, len(l.ecc)), pf: make([][]float64, len(l.ecc)),
		pooled: make([]float64, l.headWidth()), argmax: make([]int32, l.pooledWidth()),
		act: make([][]float64, len(l.den)), pre: make([][]float64, len(l.den)),
	}
	rows := 1
	if l.arch.PerNode {
		rows = l.ny
		ws.dhead = make([]float64, l.headWidth())
	}
	mw := max(l.pooledWidth(), l.nout)
	for i, t := range l.den {
		ws.act[i] = make([]float64, rows*l.denIn[i])
		ws.pre[i] = make([]float64, rows*t.cols)
		mw = max(mw, t.rows, t.cols)
	}
	ws.dv = make([]float64, mw)
	ws.dv2 = make([]float64, mw)
	return ws
}

// network is a layout plus parameter values.
type network struct {
	lay *layout
	p   []float64
}

// forwardGraph runs the ECC layers and the sum readout, returning the pooled embedding (workspace
// storage).
func (nw *network) forwardGraph(g *graph, ws *workspace) []float64 {
	l := nw.lay
	n := g.n
	h := g.x
	for i, t := range l.ecc {
		in, out := l.eccIn[i], l.eccB[i].cols
		psi, p := nw.edgeUnits(g, ws, i)
		ws.z[i] = grow(ws.z[i], n*out)
		ws.h[i] = grow(ws.h[i], n*out)
		eccForward(g, psi, l.ne, h, in, out, l.view(nw.p, t), l.view(nw.p, l.eccB[i]), p, ws.z[i], ws.h[i], l.arch.Aggr == AggrMean)
		h = ws.h[i]
		if ok, off := l.pooled(i); ok {
			sumPool(n, out, h, ws.pooled[off:])
			if l.arch.Pool == PoolSumMax {
				maxPool(n, out, h, ws.pooled[off+out:], ws.argmax[off+out:])
			}
		}
	}
	if l.arch.PerNode {
		copy(ws.pooled[l.pooledWidth():], h[:l.ny*l.arch.ECC[len(l.ecc)-1]])
	}
	return ws.pooled
}

// edgeUnits returns what ECC layer i's kernel network makes of every edge slot (the edge features,
// or the hidden layer's units, computed here) and the buffer its P goes to: shared scratch, or the
// layer's own when the hidden kernel layer's backward pass needs it.
func (nw *network) edgeUnits(g *graph, ws *workspace, i int) (psi, p []float64) {
	l := nw.lay
	size := g.n * l.ecc[i].cols
	if l.arch.Kernel == 0 {
		ws.p = grow(ws.p, size)
		return g.ef, ws.p
	}
	nnz := int(g.ptr[g.n]) * l.arch.Kernel
	ws.kpre[i], ws.kpsi[i] = grow(ws.kpre[i], nnz), grow(ws.kpsi[i], nnz)
	kernelForward(int(g.ptr[g.n]), g.ef, l.view(nw.p, l.eccU[i]), l.view(nw.p, l.eccC[i]), ws.kpre[i], ws.kpsi[i])
	ws.pf[i] = grow(ws.pf[i], size)
	return ws.kpsi[i], ws.pf[i]
}

// forwardHead runs the dense and output layers on the head's input (forwardGraph's result) and
// returns the outputs (logits, before any softmax or sigmoid; workspace storage). With PerNode the
// layers run once per binary, on its node's state and the readout, and give its logit.
func (nw *network) forwardHead(in []float64, ws *workspace) []float64 {
	l := nw.lay
	last := len(l.den) - 1
	if !l.arch.PerNode {
		copy(ws.act[0], in)
		nw.denseRow(ws, 0)
		return ws.pre[last]
	}
	pw, w := l.pooledWidth(), l.arch.ECC[len(l.ecc)-1]
	for j := range l.ny {
		a := ws.act[0][j*l.denIn[0] : (j+1)*l.denIn[0]]
		copy(a[:w], in[pw+j*w:pw+(j+1)*w])
		copy(a[w:], in[:pw])
		nw.denseRow(ws, j)
	}
	return ws.pre[last]
}

// denseRow runs the dense and output layers on row j of the workspace's activations.
func (nw *network) denseRow(ws *workspace, j int) {
	l := nw.lay
	last := len(l.den) - 1
	for i, t := range l.den {
		var next []float64
		if i < last {
			next = ws.act[i+1][j*t.cols:]
		}
		denseForward(t.rows, t.cols, l.view(nw.p, t), l.view(nw.p, l.denB[i]), ws.act[i][j*t.rows:], ws.pre[i][j*t.cols:], next, i < last)
	}
}

func (nw *network) forward(g *graph, ws *workspace) []float64 {
	return nw.forwardHead(nw.forwardGraph(g, ws), ws)
}

// backwardHead adds the head's parameter gradients for ∂L/∂outputs = dout to grad (a full-size
// vector) and, when needPooled, returns ∂L/∂(head input) (workspace storage).
func (nw *network) backwardHead(ws *workspace, dout, grad []float64, needPooled bool) []float64 {
	l := nw.lay
	if !l.arch.PerNode {
		return nw.backwardRow(ws, 0, dout, grad, needPooled)
	}
	pw, w := l.pooledWidth(), l.arch.ECC[len(l.ecc)-1]
	clear(ws.dhead)
	for j := range l.ny {
		d := nw.backwardRow(ws, j, dout[j:j+1], grad, needPooled)
		if d == nil {
			continue
		}
		for c, v := range d[:w] {
			ws.dhead[pw+j*w+c] += v
		}
		for c, v := range d[w:] {
			ws.dhead[c] += v
		}
	}
	if !needPooled {
		return nil
	}
	return ws.dhead
}

// backwardRow back-propagates ∂L/∂outputs = dout through the dense layers of row j, adding their
// gradients to grad; when needIn it returns ∂L/∂(row j's input) (workspace storage).
func (nw *network) backwardRow(ws *workspace, j int, dout, grad []float64, needIn bool) []float64 {
	l := nw.lay
	last := len(l.den) - 1
	d := ws.dv[:len(dout)]
	copy(d, dout)
	for i := last; i >= 0; i-- {
		t := l.den[i]
		var da []float64
		if i > 0 || needIn {
			da = ws.dv2[:t.rows]
		}
		denseBackward(t.rows, t.cols, l.view(nw.p, t), ws.act[i][j*t.rows:], ws.pre[i][j*t.cols:], d, l.view(grad, t), l.view(grad, l.denB[i]), da, i < last)
		if da == nil {
			return nil
		}
		ws.dv, ws.dv2 = ws.dv2, ws.dv
		d = ws.dv[:t.rows]
	}
	return d
}

// backwardGraph adds the ECC layers' parameter gradients for ∂L/∂pooled = dpooled to grad.
func (nw *network) backwardGraph(g *graph, ws *workspace, dpooled, grad []float64) {
	l := nw.lay
	n := g.n
	top := len(l.ecc) - 1
	ws.dh = grow(ws.dh, n*l.arch.ECC[top])
	clear(ws.dh)
	if l.arch.PerNode {
		copy(ws.dh, dpooled[l.pooledWidth():]) // the variable nodes' rows, read by the head directly
	}
	for i := top; i >= 0; i-- {
		t := l.ecc[i]
		in, out := l.eccIn[i], l.eccB[i].cols
		// ws.dh holds ∂L/∂h_i through the layers above; the readout of h_i adds its own part.
		if ok, off := l.pooled(i); ok {
			sumPoolBackward(n, out, dpooled[off:], ws.dh)
			if l.arch.Pool == PoolSumMax {
				maxPoolBackward(out, dpooled[off+out:], ws.argmax[off+out:], ws.dh)
			}
		}
		h := g.x
		var dhin []float64
		if i > 0 {
			h = ws.h[i-1]
			ws.dh2 = grow(ws.dh2, n*in)
			dhin = ws.dh2
		}
		ws.p = grow(ws.p, n*t.cols)
		psi, pf, dpsi := g.ef, []float64(nil), []float64(nil)
		nnz := int(g.ptr[n])
		if l.arch.Kernel > 0 {
			psi, pf = ws.kpsi[i], ws.pf[i]
			ws.dpsi = grow(ws.dpsi, nnz*l.arch.Kernel)
			dpsi = ws.dpsi
			clear(dpsi)
		}
		eccBackward(g, psi, l.ne, in, out, l.view(nw.p, t), h, ws.z[i], ws.dh, l.view(grad, t), l.view(grad, l.eccB[i]), ws.p, dhin, pf, dpsi, l.arch.Aggr == AggrMean)
		if l.arch.Kernel > 0 {
			kernelBackward(nnz, g.ef, ws.kpre[i], dpsi, l.view(grad, l.eccU[i]), l.view(grad, l.eccC[i]))
		}
		ws.dh, ws.dh2 = ws.dh2, ws.dh
	}
}

// backward adds all parameter gradients of one sample, for ∂L/∂outputs = dout, to grad.
func (nw *network) backward(g *graph, ws *workspace, dout, grad []float64) {
	nw.backwardGraph(g, ws, nw.backwardHead(ws, dout, grad, true), grad)
}
