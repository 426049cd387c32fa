// Package ipm is gbd's native NLP back-end: a primal–dual interior-point method in pure Go for the
// convex subproblems S(y) and F(y) that gbd builds (gbd/nlp's contract). Ipopt (gbd/nlp/ipopt)
// stays as the second back-end and as the reference of the shared suite (gbd/nlp/nlpsuite), which
// both run.
//
// # Formulation
//
// Every row i gets a slack s_i carrying its bounds and two elastic variables p_i, e_i ≥ 0:
//
//	g_i(x) − s_i − p_i + e_i = 0,   GL_i ≤ s_i ≤ GU_i,   XL ≤ x ≤ XU,
//
// and the objective ω·f(x) + ρ·Σ(p_i + e_i). With ω = 1 and a large penalty ρ this is an exact
// penalty of the problem; its solution has p = e = 0 whenever the problem is feasible and ρ
// exceeds the multipliers. Equality rows have a fixed slack, one-sided rows one elastic.
//
// # Algorithm
//
// Mehrotra's predictor–corrector on the KKT conditions of the barrier problem, fraction to the
// boundary 0.99, a line search on the KKT residual's 2-norm (merit). Trial points have their row
// slacks reset to meet the rows exactly when that keeps them well inside their bounds: a Newton
// step is linear in the rows, and along directions of little curvature (the variables of inactive
// rows) it may move x far enough for the rows' curvature to matter. When the merit stops decreasing
// near the tolerance a step that lowers the largest KKT residual is accepted. A run that still
// ends failed or at the iteration limit is repeated once with the monotone barrier rule
// (Options.Conservative), slower and steadier. Options.Stop is checked between iterations.
//
// # Infeasibility
//
// If a row multiplier reaches the penalty (|λ_i| ≥ 0.9ρ), the iteration drops the objective (ω = 0,
// ρ = 1) and minimizes the row violation over the box. Its multipliers converge to a Farkas-type
// certificate (certificate.go): the linearization of Σ λ̂_i (g_i − b_i) bounds the least possible
// weighted violation over the whole box from below, so a positive value (above 1e-8, scaled) proves
// infeasibility; the result's MultG are then the certificate's. If the phase finds a feasible point
// instead, the objective returns with ρ a hundred times larger.
//
// # Linear algebra
//
// The symbolic work is done once per problem structure (sparsity of the Jacobian and Hessian) and
// kept while the structure repeats, as it does for every y of a gbd problem and every control step
// of a plant (structure.go): the Hessian's connected blocks, the rows each block touches and the
// Schur complement's band. Each iteration factors the Hessian blocks plus their barrier terms
// (Cholesky, 1×1 for the pump station's diagonal Hessian) and then the Schur complement
// S = J H⁻¹ Jᵀ + D over the rows (banded Cholesky), with iterative refinement against the
// unregularized system. A pivot is judged against its own diagonal: an inactive row's diagonal
// holds the inverse of a vanishing complementarity ratio and must not set the scale of the others.
//
// # Scaling, starting point, termination
//
// A variable that enters every function linearly and whose Jacobian column stays below 1e-3 is
// measured in units of its largest entry (x_j = x̃_j / max_i |J_ij|): the pump station's soft
// problem prices its penalty variables in € and carries them in the level rows with coefficients
// 1/ρ ≈ 1e-5 and 1/σ ≈ 1e-7, which unscaled put the rows' multipliers (up to σ) above the elastic
// penalty and mix Schur entries 14 orders apart. The elastic penalty is then raised above the
// multipliers those variables imply (10·|∇f_j|/max_i |J̃_ij|), and their stationarity residuals
// and bound multipliers are measured in their own units in the stopping test. Then objective and
// rows are scaled so that no gradient entry at the start exceeds 100 (Ipopt's rule; the rescaled
// variables' entries, large by design, do not count).
// The start is x0 pushed into the box by 1e-2 relative, slacks at the row values pushed into their
// bounds, bound multipliers at μ0/gap with μ0 = 0.1. The solve ends Solved only when the largest
// primal violation, dual residual and complementarity (scaled as Ipopt does, with s_max = 100) are
// all ≤ Options.Tol (1e-9 by default): there is no "acceptable" level. Otherwise it ends
// Infeasible, Unbounded (x beyond 1e12 while feasible and decreasing), Stopped, IterationLimit or
// Failed, with a message.
//
// # Use
//
// A Solver keeps its symbolic analysis and a workspace sized for the last structure, so one Solver
// serves one goroutine at a time; give each goroutine its own. There is no global state or lock:
// solvers run in parallel on all cores. After the first solve of a structure a Solve allocates
// nothing. The returned slices belong to the Solver until its next Solve.
package ipm
