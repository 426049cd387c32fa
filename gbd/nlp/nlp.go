// Package nlp is the back-end-neutral contract between gbd and the solvers of its convex NLP
// subproblems: the problem form, the options, the result and the statuses every back-end maps its
// own outcome to. gbd compiles S(y) and F(y) into a Problem and hands it to a Solver; the
// back-ends sit under this package, side by side: the native interior-point solver (gbd/nlp/ipm,
// the default) and the Ipopt binding (gbd/nlp/ipopt) each implement Solver in their own package, so
// gbd depends on neither's types, and both run the shared suite of gbd/nlp/nlpsuite.
//
// The problem is
//
//	min f(x)  s.t.  GL ≤ g(x) ≤ GU,  XL ≤ x ≤ XU
//
// with f convex, every row g_i with a finite upper bound only convex, every row with a finite
// lower bound concave (in gbd: affine), and equalities (GL_i = GU_i) affine. Under that
// assumption any point that meets the KKT conditions to the tolerance is a global optimum, and its
// multipliers give valid Benders cuts.
package nlp

import (
	"fmt"
	"math"

	"gbdmpc/internal/enum"
)

// Evaluator supplies the problem's functions and their exact derivatives. Every method returns
// false when it cannot evaluate at x (outside a function's domain, overflow), so that a solver
// can step back instead of seeing NaN.
//
// The slices passed in belong to the solve and are reused on the next call: read x and write the
// output during the call, but do not keep them. A solver calls an Evaluator from one goroutine.
type Evaluator interface {
	Objective(x []float64) (float64, bool)
	Gradient(x, grad []float64) bool
	Constraints(x, g []float64) bool
	// Jacobian writes the nonzeros of ∂g/∂x in Problem.JacRow/JacCol order.
	Jacobian(x, vals []float64) bool
	// Hessian writes objFactor·∇²f(x) + Σ_i lambda_i·∇²g_i(x) in Problem.HessRow/HessCol order
	// (lower triangle, row ≥ col; an entry may appear once only).
	Hessian(x []float64, objFactor float64, lambda, vals []float64) bool
}

// Problem is one NLP. The sparsity (N, M, JacRow/JacCol, HessRow/HessCol) is its structure: gbd
// keeps it fixed for every y of a Problem and for every control step of a plant, and only the
// bounds change, so a solver may do its symbolic work once per structure and reuse it.
type Problem struct {
	N, M int
	// XL, XU have length N; ±Inf means no bound. XL[j] == XU[j] fixes x_j.
	XL, XU []float64
	// GL, GU have length M; GL[i] == GU[i] makes row i an equality, GL[i] = −Inf an inequality
	// g_i ≤ GU[i].
	GL, GU []float64
	// JacRow, JacCol give the sparsity of ∂g/∂x, 0-based (row = constraint, column = variable).
	JacRow, JacCol []int32
	// HessRow, HessCol give the lower triangle (row ≥ col) of the Hessian of the Lagrangian.
	HessRow, HessCol []int32
	Eval             Evaluator
}

// Status says how a solve ended. Only Solved certifies anything.
type Status int

const (
	// Solved: the returned point meets the scaled KKT conditions (primal feasibility,
	// stationarity, complementarity) to Options.Tol. Nothing short of that is ever Solved.
	Solved Status = iota + 1
	// Infeasible: the solver stopped at a point that (locally, so for a convex problem globally)
	// minimizes the constraint violation with a violation above the tolerance. It is a verdict,
	// not a certificate: gbd confirms it with the feasibility problem F(y).
	Infeasible
	// Unbounded: the objective decreases without bound over the feasible set.
	Unbounded
	// Stopped: Options.Stop asked the solver to stop (a deadline).
	Stopped
	// IterationLimit: Options.MaxIter iterations without meeting the tolerance.
	IterationLimit
	// Failed: numerical trouble (no acceptable step, an evaluation that keeps failing, a singular
	// system); Result.Message says what.
	Failed
)

var statusNames = [...]string{
	Solved:         "solved",
	Infeasible:     "infeasible",
	Unbounded:      "unbounded",
	Stopped:        "stopped",
	IterationLimit: "iteration_limit",
	Failed:         "failed",
}

func (s Status) String() string { return enum.Name(statusNames[:], s, "Status") }

// Options of one solve. The zero value means the documented defaults.
type Options struct {
	// Tol is the scaled KKT tolerance a point must meet to be Solved (default DefaultTol).
	Tol float64
	// MaxIter caps the iterations (default DefaultMaxIter).
	MaxIter int
	// Stop, if set, is asked once per iteration; true ends the solve with Stopped. Deadlines are
	// enforced through it on the caller's clock.
	Stop func() bool
	// Conservative asks for the back-end's most robust strategy (e.g. a monotone barrier
	// update). gbd sets it when it retries a solve that ended badly.
	Conservative bool
}

// Defaults for zero Options fields.
const (
	DefaultTol     = 1e-9
	DefaultMaxIter = 200
)

// WithDefaults fills the zero fields.
func (o Options) WithDefaults() Options {
	if o.Tol <= 0 {
		o.Tol = DefaultTol
	}
	if o.MaxIter <= 0 {
		o.MaxIter = DefaultMaxIter
	}
	return o
}

// Result of a solve. X and the multipliers are a solution only when Status is Solved; otherwise
// they are the last iterate (after Infeasible, the point of least violation).
//
// Sign convention (Ipopt's): ∇f(x) + Σ_i MultG_i ∇g_i(x) − MultXL + MultXU = 0, with MultG_i ≥ 0
// at an active upper row bound, ≤ 0 at an active lower one, and MultXL, MultXU ≥ 0.
//
// A Solver may return slices it owns and reuses at its next Solve: copy what must outlive it.
type Result struct {
	Status         Status
	X              []float64
	Obj            float64   // f(X)
	G              []float64 // g(X)
	MultG          []float64
	MultXL, MultXU []float64
	Iterations     int
	// Residuals at X, as the back-end scales them for its tolerance test (NaN when not known).
	PrimalInf, DualInf, Compl float64
	Message                   string
}

// Solver solves Problems. An error is returned only for a problem that could not be run at all
// (invalid input); every outcome of a solve that ran is a Status. A Solver value may hold a
// workspace: it is used by one goroutine at a time, and every goroutine that solves has its own.
type Solver interface {
	Solve(p *Problem, x0 []float64, opt Options) (Result, error)
}

// Validate checks dimensions, bounds, structure indices and x0: everything a back-end would
// otherwise reject without saying why, or misuse.
func (p *Problem) Validate(x0 []float64) error {
	if p == nil {
		return fmt.Errorf("nlp: nil problem")
	}
	if p.N < 1 || p.M < 0 {
		return fmt.Errorf("nlp: need N ≥ 1 and M ≥ 0, got N=%d M=%d", p.N, p.M)
	}
	if p.Eval == nil {
		return fmt.Errorf("nlp: nil Evaluator")
	}
	if len(x0) != p.N {
		return fmt.Errorf("nlp: x0 has length %d, want %d", len(x0), p.N)
	}
	for j, v := range x0 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("nlp: x0[%d] = %v is not finite", j, v)
		}
	}
	if err := checkBounds("x", p.XL, p.XU, p.N); err != nil {
		return err
	}
	if err := checkBounds("g", p.GL, p.GU, p.M); err != nil {
		return err
	}
	if err := checkPattern("Jacobian", p.JacRow, p.JacCol, p.M, p.N, false); err != nil {
		return err
	}
	return checkPattern("Hessian", p.HessRow, p.HessCol, p.N, p.N, true)
}

func checkBounds(what string, lo, hi []float64, n int) error {
	if len(lo) != n || len(hi) != n {
		return fmt.Errorf("nlp: %s bounds have lengths %d/%d, want %d", what, len(lo), len(hi), n)
	}
	for i := range n {
		if math.IsNaN(lo[i]) || math.IsNaN(hi[i]) || math.IsInf(lo[i], 1) || math.IsInf(hi[i], -1) || lo[i] > hi[i] {
			return fmt.Errorf("nlp: %s[%d] has bounds [%v, %v]", what, i, lo[i], hi[i])
		}
	}
	return nil
}

func checkPattern(what string, rows, cols []int32, nrow, ncol int, lower bool) error {
	if len(rows) != len(cols) {
		return fmt.Errorf("nlp: %s pattern has %d rows and %d columns", what, len(rows), len(cols))
	}
	for k := range rows {
		r, c := rows[k], cols[k]
		if r < 0 || int(r) >= nrow || c < 0 || int(c) >= ncol {
			return fmt.Errorf("nlp: %s entry %d at (%d,%d) is outside %d×%d", what, k, r, c, nrow, ncol)
		}
		if lower && r < c {
			return fmt.Errorf("nlp: %s entry %d at (%d,%d) is above the diagonal", what, k, r, c)
		}
	}
	return nil
}
