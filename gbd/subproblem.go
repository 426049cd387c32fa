package gbd

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipm"
)

// NewNLP returns a new default NLP back-end, the one an Engine or Subproblems whose NLP is nil
// uses: the native interior-point solver (gbd/nlp/ipm), pure Go. It holds a workspace: give every
// goroutine that solves its own. The product's back-ends, including the native one with Ipopt as
// its rescue, are named in package backend.
func NewNLP() nlp.Solver { return ipm.New() }

// ErrSubproblem is wrapped by errors from the NLP stage: the solver failed on both S(y) and F(y), so
// no valid cut could be made for y.
var ErrSubproblem = errors.New("subproblem could not be solved")

// feasZeroTol is the optimal value of F(y) at or below which y is taken to be feasible after all.
const feasZeroTol = 1e-6

// SubResult is the outcome of evaluating one binary assignment.
type SubResult struct {
	Feasible bool
	Z        float64   // Z(y), the subproblem optimum (Feasible only)
	X        []float64 // x*(y) or x̄(y), len NX
	Cut      Cut
	// Violation is F(y)'s optimal value (total constraint violation), infeasible only.
	Violation float64
	// NoGood is set when F's multipliers did not separate y numerically and the feasibility cut is
	// the no-good cut that excludes exactly y.
	NoGood     bool
	NLPStatus  string
	Iterations int
	// Duals are the multipliers behind Cut (copies, nil for a no-good cut). A CutPool keeps them
	// to re-evaluate the cut for later problems.
	Duals *CutDuals
}

// Subproblems evaluates binary assignments of one Problem: S(y), and F(y) when S(y) is infeasible.
// The compiled NLPs are reused across assignments.
type Subproblems struct {
	// Clock measures the time limit of Evaluate (default RealClock).
	Clock      Clock
	p          *Problem
	solver     nlp.Solver
	opt        nlp.Options
	s, f, fAll *compiled
	mu, lam    []float64
	// lag strengthens every cut (Lagrangian.Strengthened); nil when the Lagrangian is not
	// separable or the problem does not validate, and then the cuts are the classical ones.
	lag  *Lagrangian
	x0   []float64 // warm start: the last solution, clamped into each new box
	cold []float64 // the problem's own start (0 clamped into the box), for a retry of F(y)
	// setup is the shortest time an NLP of this solve took from its call to its first iteration
	// callback (problem creation, initialization, the first factorization): an NLP is not started
	// when even that much would take it past its limit (0 until one is measured).
	setup     time.Duration
	setupSeen bool
	timer     *nlpTimer // the limit of the Evaluate in progress (nil: none)
	// stage makes the optimality cuts stage cuts (stagecut.go; nil: strengthened or classical).
	stage *stagePlan
	// hinges, when not nil, are the problem's hinges, which the strengthened and stage optimality
	// cuts carry (the master takes them: HingeTaker).
	hinges *Hinges
}

// enableStageCuts makes every optimality cut a stage cut over the stages of Y_pb, when the
// problem splits by them (newStagePlan) and its cuts are strengthened; it reports whether it did.
func (sp *Subproblems) enableStageCuts(stages [][]int) bool {
	if sp.lag == nil || len(stages) < 2 {
		return false
	}
	pl := newStagePlan(sp.p, stages, sp.lag.gate)
	if pl == nil {
		return false
	}
	pl.solver, pl.opt = NewNLP(), sp.opt
	sp.stage = pl
	return true
}

// timeUp reports whether the Evaluate in progress is past its limit.
func (sp *Subproblems) timeUp() bool {
	t := sp.timer
	return t != nil && !t.clock.Now().Before(t.end)
}

// nlpTimer enforces one Evaluate's time limit on the Subproblems' clock (doc.go, "Deadline
// rule"). A back-end can be stopped only where it asks Options.Stop (once per iteration), and its
// first ask comes after its set-up, so the timer
//
//   - does not start an NLP when the shortest set-up of the solve's earlier NLPs would take it
//     past the limit: it would be stopped at its first callback having produced nothing;
//   - stops an NLP at the first iteration callback at or past the limit.
//
// An NLP thus ends past the limit by at most one iteration, or one set-up longer than the
// shortest, plus the back-end's work after its last callback. It reads the clock once per NLP start and
// once per iteration callback.
type nlpTimer struct {
	sp        *Subproblems
	clock     Clock
	end       time.Time
	callStart time.Time // the current NLP's call
	called    bool      // the current NLP has reached its first iteration callback
}

// begin reports whether an NLP may start now, and starts timing it.
func (t *nlpTimer) begin() bool {
	now := t.clock.Now()
	if !now.Add(t.sp.setup).Before(t.end) {
		return false
	}
	t.callStart, t.called = now, false
	return true
}

// stop is the NLP's Stop hook.
func (t *nlpTimer) stop() bool {
	now := t.clock.Now()
	if !t.called {
		t.called = true
		if d := max(0, now.Sub(t.callStart)); !t.sp.setupSeen || d < t.sp.setup {
			t.sp.setup, t.sp.setupSeen = d, true
		}
	}
	return !now.Before(t.end)
}

// solveNLP is every NLP call of Evaluate: under a time limit it is not made when the limit leaves
// no room for it (the result then says Stopped, as if the back-end had been stopped at once).
func (sp *Subproblems) solveNLP(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	if t := sp.timer; t != nil && !t.begin() {
		return nlp.Result{Status: nlp.Stopped, X: x0}, nil
	}
	return sp.solver.Solve(p, x0, opt)
}

// NewSubproblems compiles S and F for p. solver nil means the default back-end; opt are the options
// of every solve (Evaluate adds its time limit through Options.Stop).
func NewSubproblems(p *Problem, solver nlp.Solver, opt nlp.Options) *Subproblems {
	if solver == nil {
		solver = NewNLP()
	}
	sp := &Subproblems{
		p: p, solver: solver, opt: opt,
		s:   compileNLP(p, false, true),
		f:   compileNLP(p, true, true),
		mu:  make([]float64, len(p.Ineq)),
		lam: make([]float64, len(p.Eq)),
	}
	// Not validated again (Engine.Solve and SolveByEnumeration have): on a problem that would not
	// validate, a strengthened cut fails its own checks (convexity per variable, finiteness) and
	// the classical cut stays.
	if lag := indexLagrangian(p); lag.separable() {
		sp.lag = lag
	}
	sp.x0 = make([]float64, p.NX)
	for i := range sp.x0 {
		sp.x0[i] = clampStart(0, p.XLo[i], p.XHi[i])
	}
	sp.cold = append([]float64(nil), sp.x0...)
	return sp
}

// SetStart sets the starting point of the next NLP (e.g. the shifted previous plan).
func (sp *Subproblems) SetStart(x []float64) {
	if len(x) == sp.p.NX {
		copy(sp.x0, x)
	}
}

func clampStart(v, lo, hi float64) float64 {
	if v < lo {
		v = lo
	}
	if v > hi {
		v = hi
	}
	if math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Evaluate solves S(y) and, if it is infeasible, F(y), and returns the Benders cut. limit > 0 bounds
// the whole evaluation, every NLP of it (S, F and their retries) included, on Clock: no NLP is
// started that its set-up would take past the limit, and the back-end is stopped at its first
// iteration past it (see nlpTimer). An evaluation cut short returns an error wrapping ErrTimeUp.
func (sp *Subproblems) Evaluate(y []float64, limit time.Duration) (SubResult, error) {
	opt := sp.opt
	sp.timer = nil
	if limit > 0 {
		clock := sp.Clock
		if clock == nil {
			clock = RealClock
		}
		t := &nlpTimer{sp: sp, clock: clock, end: clock.Now().Add(limit)}
		sp.timer = t
		defer func() { sp.timer = nil }()
		opt.Stop = t.stop
	}
	status := ""
	iters := 0
	consistent := sp.s.setY(y)
	if consistent {
		res, err := sp.solveS(sp.start(sp.s), opt)
		if err != nil {
			return SubResult{}, err
		}
		status, iters = res.Status.String(), res.Iterations
		if res.Status == nlp.Solved {
			return sp.optimality(res, status, iters)
		}
		if timeUp(res.Status) {
			return SubResult{NLPStatus: status}, fmt.Errorf("S(y): %w: %w", ErrSubproblem, ErrTimeUp)
		}
	}
	f := sp.feasibility(y)
	res, err := sp.solveF(f, opt)
	if err != nil {
		return SubResult{}, err
	}
	iters += res.Iterations
	if res.Status != nlp.Solved {
		if timeUp(res.Status) {
			return SubResult{NLPStatus: res.Status.String()}, fmt.Errorf("F(y): %w: %w", ErrSubproblem, ErrTimeUp)
		}
		return SubResult{NLPStatus: res.Status.String()}, fmt.Errorf("F(y) ended %s after S(y) ended %q: %w", res.Status, status, ErrSubproblem)
	}
	if res.Obj <= feasZeroTol && consistent {
		// F found a feasible point, so S(y)'s verdict was a false infeasibility detection (it
		// happens on feasible sets with empty interior). Solve S again from that point with the
		// back-end's conservative strategy, which does not rely on the same heuristics.
		retry := opt
		retry.Conservative = true
		x0 := make([]float64, sp.s.n)
		for i := range sp.p.NX {
			x0[i] = clampStart(res.X[i], sp.s.xl[i], sp.s.xu[i])
		}
		rs, err := sp.solveS(x0, retry)
		if err != nil {
			return SubResult{}, err
		}
		if rs.Status == nlp.Solved {
			return sp.optimality(rs, status+", then "+rs.Status.String(), iters+rs.Iterations)
		}
		if timeUp(rs.Status) {
			return SubResult{NLPStatus: rs.Status.String()}, fmt.Errorf("S(y) retry: %w: %w", ErrSubproblem, ErrTimeUp)
		}
		return SubResult{NLPStatus: rs.Status.String()}, fmt.Errorf("S(y) ended %q twice but F(y) found a feasible point (violation %.3g): %w", rs.Status, res.Obj, ErrSubproblem)
	}
	if res.Obj <= feasZeroTol {
		return SubResult{NLPStatus: res.Status.String()}, fmt.Errorf("the variable bounds cross for this y but F(y) found no violation (%.3g): %w", res.Obj, ErrSubproblem)
	}
	f.rowMultipliers(res.X, res.MultG, sp.mu, sp.lam)
	x := append([]float64(nil), res.X[:sp.p.NX]...)
	cut, err := f.cut(x, sp.mu, sp.lam)
	if err != nil {
		return SubResult{}, fmt.Errorf("F(y): %w: %w", ErrSubproblem, err)
	}
	out := SubResult{X: x, Cut: cut, Violation: res.Obj, NLPStatus: "infeasible (" + status + ")", Iterations: iters}
	// The cut must exclude y itself, or GBD could propose y again. Numerically weak multipliers are
	// replaced by the no-good cut, which is valid because y is infeasible.
	if cut.Eval(y) <= 1e-9 {
		out.Cut, out.NoGood = noGoodCut(y), true
	} else {
		out.Duals = sp.duals()
	}
	return out, nil
}

func timeUp(s nlp.Status) bool { return s == nlp.Stopped }

// solveS solves S(y) from x0 with the given options.
func (sp *Subproblems) solveS(x0 []float64, opt nlp.Options) (nlp.Result, error) {
	res, err := sp.solveNLP(sp.s.problem(), x0, opt)
	if err != nil {
		return res, fmt.Errorf("S(y): %w: %w", ErrSubproblem, err)
	}
	return res, nil
}

// solveF solves F(y); F always has a feasible point, so a failure is retried before it is
// reported: with the back-end's conservative strategy, then from the cold start (the problem's
// own, not the last solution): a warm start with variables on their bounds, next to a feasible set
// with empty interior, has stalled both back-ends.
func (sp *Subproblems) solveF(f *compiled, opt nlp.Options) (nlp.Result, error) {
	res, err := sp.solveNLP(f.problem(), sp.start(f), opt)
	if err != nil {
		return res, fmt.Errorf("F(y): %w: %w", ErrSubproblem, err)
	}
	again := func(res nlp.Result) bool { return res.Status != nlp.Solved && !timeUp(res.Status) }
	if again(res) && !opt.Conservative {
		retry := opt
		retry.Conservative = true
		r2, err := sp.solveNLP(f.problem(), sp.start(f), retry)
		if err == nil {
			r2.Iterations += res.Iterations
			res = r2
		}
	}
	if again(res) && !slices.Equal(sp.x0, sp.cold) {
		r2, err := sp.solveNLP(f.problem(), sp.startFrom(f, sp.cold), opt)
		if err == nil {
			r2.Iterations += res.Iterations
			res = r2
		}
	}
	return res, nil
}

// optimality turns a solution of S(y) into the result with its optimality cut.
func (sp *Subproblems) optimality(res nlp.Result, status string, iters int) (SubResult, error) {
	sp.s.rowMultipliers(res.X, res.MultG, sp.mu, sp.lam)
	x := append([]float64(nil), res.X[:sp.p.NX]...)
	cut, err := sp.s.cut(x, sp.mu, sp.lam)
	if err != nil {
		return SubResult{}, fmt.Errorf("S(y): %w: %w", ErrSubproblem, err)
	}
	at := cut.Eval(sp.s.y)
	cut = sp.strengthen(cut, at, sp.mu, nil)
	// With hinges the strengthened and stage cuts are made with the hinge rows' multipliers at 0
	// and carry the hinges' exact cost instead (hinge.go): never below the cut of the solve's own
	// multipliers at any y.
	mu := sp.mu
	if sp.hinges != nil && cut.Kind == OptimalityCut {
		mu = slices.Clone(sp.mu)
		sp.hinges.zeroRows(mu)
		cut = sp.strengthen(cut, at, mu, sp.hinges)
	}
	if sp.stage != nil && cut.Kind == OptimalityCut {
		if sc, ok := sp.stage.cut(CutDuals{Mu: mu, Lam: sp.lam}, sp.timeUp); ok {
			sc.Hinges = sp.hinges
			if sc.Eval(sp.s.y) >= at-strengthenTol*math.Max(1, math.Abs(at)) {
				sc.Iter = cut.Iter
				cut = sc
			}
		}
	}
	copy(sp.x0, x)
	return SubResult{Feasible: true, Z: res.Obj, X: x, Cut: cut, NLPStatus: status, Iterations: iters, Duals: sp.duals()}, nil
}

// strengthen returns the strengthened cut of the multipliers mu and the last λ
// (Lagrangian.Strengthened), carrying the hinges h (nil: none), in place of cut when it is at
// least as high as at, the classical cut's value at the evaluated y, within the rounding of the
// multipliers: the classical cut is tight there (it is Z(y), or F(y)'s value), and a replacement
// that is not would let the master propose y again with a bound below its value. Otherwise, or
// when the Lagrangian has no minimum, cut stays.
func (sp *Subproblems) strengthen(cut Cut, at float64, mu []float64, h *Hinges) Cut {
	if sp.lag == nil {
		return cut
	}
	strong, err := sp.lag.Strengthened(cut.Kind, CutDuals{Mu: mu, Lam: sp.lam})
	if err != nil {
		return cut
	}
	strong.Hinges = h
	if strong.Eval(sp.s.y) < at-strengthenTol*math.Max(1, math.Abs(at)) {
		return cut
	}
	strong.Carried, strong.Iter = false, cut.Iter
	return strong
}

// strengthenTol is how far (relative) a strengthened cut may sit below the classical one at the
// evaluated y and still replace it: the multipliers' own accuracy, far inside the default ε.
const strengthenTol = 1e-7

// duals copies the multipliers of the last cut.
func (sp *Subproblems) duals() *CutDuals {
	d := CutDuals{Mu: sp.mu, Lam: sp.lam}.Clone()
	return &d
}

// start is the starting point of c's next solve: the last solution (or SetStart's point), and for
// F the slacks that make it feasible.
func (sp *Subproblems) start(c *compiled) []float64 { return sp.startFrom(c, sp.x0) }

// startFrom is start from the point x (len NX).
func (sp *Subproblems) startFrom(c *compiled, x []float64) []float64 {
	x0 := make([]float64, c.n)
	for i := 0; i < sp.p.NX; i++ {
		x0[i] = clampStart(x[i], c.xl[i], c.xu[i])
	}
	if c.feas {
		// Start each slack at its row's violation so the starting point is feasible for F.
		g := make([]float64, c.m)
		sl := sp.p.NX
		for r := 0; r < c.m; r++ {
			v, ok := c.rowExpr(r).EvalX(x0)
			if !ok {
				v = 0
			}
			g[r] = v - c.gu[r]
			if r < len(c.kept) {
				x0[sl] = math.Max(0, g[r]) + 1e-3
				sl++
			} else {
				x0[sl], x0[sl+1] = math.Max(0, g[r])+1e-3, math.Max(0, -g[r])+1e-3
				sl += 2
			}
		}
	}
	return x0
}

// noGoodCut is φ(y) = 1 − Σ_{i: ŷ_i=1} (1 − y_i) − Σ_{i: ŷ_i=0} y_i ≤ 0, which excludes exactly ŷ.
func noGoodCut(yh []float64) Cut {
	c := Cut{Kind: FeasibilityCut, Coef: make([]float64, len(yh)), Const: 1}
	for i, v := range yh {
		if v > 0.5 {
			c.Coef[i] = 1
			c.Const--
		} else {
			c.Coef[i] = -1
		}
	}
	return c
}

// Compiled returns the NLP the engine hands its back-end for y: S(y), or F(y) with feas, and the
// starting point it would use. ok is false when S(y)'s converted bounds cross (the engine then
// goes straight to F(y) without solving S). The problem is owned by sp and changes with the next
// call or Evaluate; it exists so that back-ends can be tested and measured on the real
// subproblems of a family.
func (sp *Subproblems) Compiled(y []float64, feas bool) (p *nlp.Problem, x0 []float64, ok bool) {
	if len(y) != sp.p.NY {
		return nil, nil, false
	}
	if !feas {
		ok = sp.s.setY(y)
		return sp.s.problem(), sp.start(sp.s), ok
	}
	f := sp.feasibility(y)
	return f.problem(), sp.start(f), true
}

// feasibility is F(y) compiled and set for y.
func (sp *Subproblems) feasibility(y []float64) *compiled {
	if sp.f.setY(y) {
		return sp.f
	}
	// Turning single-variable rows into bounds left an empty box: keep them as rows so that
	// their violation is measured and priced.
	if sp.fAll == nil {
		sp.fAll = compileNLP(sp.p, true, false)
	}
	sp.fAll.setY(y)
	return sp.fAll
}
