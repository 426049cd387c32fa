package ipm

// work is a Solver's workspace: every vector one solve needs, sized for one structure and reused
// by every later solve of it, so that the steady state allocates nothing.
//
// The primal vector y has ny = n + 3m components laid out as
//
//	x (n) | s (m): row slacks | p (m): violation above GU | e (m): violation below GL
//
// and row i reads g_i(x) − s_i − p_i + e_i = 0. Components that take no part in a solve are
// held constant ("fixed"): fixed x_j, the slack of an equality row (s_i = GL_i), p_i of a row
// without upper bound, e_i of a row without lower bound, and all three of a row without any
// bound. Every finite bound gives one complementarity pair: a primal gap sg·(y_v − b) ≥ 0 and a
// dual z ≥ 0.
type work struct {
	n, m, ny int

	fix   []bool    // ny: component held constant
	rowOn []bool    // m: the row has a finite bound and a multiplier
	coef  []float64 // ny: the component's coefficient in its row (s, p: −1; e: +1; x: 0)

	// Complementarity pairs.
	np     int
	pv     []int32   // primal component
	sg     []float64 // +1 for a lower bound, −1 for an upper bound
	pb     []float64 // the bound
	el     []bool    // elastic pair (p or e ≥ 0)
	xpair  []bool    // bound of an x variable
	nplain int       // pairs that are not elastic

	// Iterate and trial point.
	y, z, lam    []float64
	yT, zT, lamT []float64
	// Directions: combined, and the affine-scaling (predictor) one.
	dy, dz, dlam    []float64
	dyA, dzA, dlamA []float64

	// Scaled problem functions at y and at the trial point.
	g, gT   []float64 // m
	gr, grT []float64 // n
	jv, jvT []float64 // nnz
	hv      []float64 // Hessian values (as returned: the caller's scale)
	hlam    []float64 // m: multipliers handed to the Hessian callback
	f0      float64   // objective at the start (unscaled), for the unboundedness test

	// Scaling: f̃ = fs·f, g̃_i = rs_i·g_i (see doc.go).
	fs     float64
	rs     []float64
	gl, gu []float64 // scaled row bounds
	xl, xu []float64 // scaled variable bounds
	// Variable scaling: x_j = cs_j·x̃_j, the iterate holds x̃ (setup.go, colScale). colScaled
	// says whether any cs_j ≠ 1; xs holds x for the callbacks.
	cs, xs    []float64
	colScaled bool

	// Newton system.
	gp   []float64 // np: each pair's gap at the iterate (set by factor, valid for its iteration)
	stat []float64 // ny: stationarity at the iterate (set by factor)
	sig  []float64 // ny: Σ_v = Σ z/gap over v's pairs
	rh   []float64 // ny: r̂_v
	rc   []float64 // m: r̂_c, then the Schur right-hand side
	dd   []float64 // m: D
	hraw []float64 // block Hessians W + Σ (unregularized)
	hfac []float64 // their Cholesky factors
	jb   []float64 // block Jacobians
	sfac []float64 // m×m Schur complement, factored in place
	ybuf []float64 // one block's L⁻¹J_bᵀ
	tn   []float64 // n scratch
	tn2  []float64
	tm   []float64 // m scratch
	tm2  []float64
	ex   []float64 // n: refinement residual
	em   []float64 // m
	ty   []float64 // ny scratch for residuals
	regW bool      // a block pivot was regularized in this factorization
	regS bool      // a Schur pivot was regularized

	// Mode.
	omega float64 // objective weight: 1, or 0 in the feasibility phase
	rho   float64 // elastic penalty in force
	rhoN  float64 // elastic penalty of the normal phase

	// Result storage, owned by the Solver and valid until the next Solve.
	xOut, gOut, multG, multXL, multXU []float64
}

// resize allocates the workspace for n variables, m rows, nnzJ Jacobian and nnzH Hessian entries
// and the block storage of st. It does nothing when the sizes already fit.
func (w *work) resize(st *structure) {
	n, m := st.n, st.m
	ny := n + 3*m
	if w.n == n && w.m == m && len(w.jv) == len(st.jacRow) && len(w.hv) == len(st.hessRow) &&
		len(w.hraw) == st.hLen && len(w.jb) == st.jLen && len(w.ybuf) == st.maxBS*max(st.maxBR, 1) {
		return
	}
	w.n, w.m, w.ny = n, m, ny
	f := func(k int) []float64 { return make([]float64, k) }
	w.fix = make([]bool, ny)
	w.rowOn = make([]bool, m)
	w.coef = f(ny)
	npMax := 2*n + 4*m
	w.pv = make([]int32, npMax)
	w.sg, w.pb = f(npMax), f(npMax)
	w.el, w.xpair = make([]bool, npMax), make([]bool, npMax)
	w.y, w.yT, w.dy, w.dyA = f(ny), f(ny), f(ny), f(ny)
	w.z, w.zT, w.dz, w.dzA = f(npMax), f(npMax), f(npMax), f(npMax)
	w.lam, w.lamT, w.dlam, w.dlamA = f(m), f(m), f(m), f(m)
	w.g, w.gT, w.hlam = f(m), f(m), f(m)
	w.gr, w.grT = f(n), f(n)
	w.jv, w.jvT = f(len(st.jacRow)), f(len(st.jacRow))
	w.hv = f(len(st.hessRow))
	w.rs, w.gl, w.gu = f(m), f(m), f(m)
	w.xl, w.xu = f(n), f(n)
	w.cs, w.xs = f(n), f(n)
	w.sig, w.rh, w.ty, w.stat = f(ny), f(ny), f(ny), f(ny)
	w.gp = f(npMax)
	w.rc, w.dd = f(m), f(m)
	w.hraw, w.hfac = f(st.hLen), f(st.hLen)
	w.jb = f(st.jLen)
	w.sfac = f(m * m)
	w.ybuf = f(st.maxBS * max(st.maxBR, 1))
	w.tn, w.tn2, w.ex = f(n), f(n), f(n)
	w.tm, w.tm2, w.em = f(m), f(m), f(m)
	w.xOut, w.gOut = f(n), f(m)
	w.multG, w.multXL, w.multXU = f(m), f(n), f(n)
}

// Component kinds of y.
func (w *work) isX(v int) bool  { return v < w.n }
func (w *work) rowOf(v int) int { return (v - w.n) % w.m }
func (w *work) sIdx(i int) int  { return w.n + i }
func (w *work) pIdx(i int) int  { return w.n + w.m + i }
func (w *work) eIdx(i int) int  { return w.n + 2*w.m + i }
