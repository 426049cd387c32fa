// Package gbd is gbdmpc's solver: the convex MINLP model, generalized Benders decomposition (GBD)
// in Floudas' variant with the contract of its master-problem back-ends, and agent-based GBD
// (Algorithm 2 of "Feasibility-aware imitation learning for Benders decomposition", seed/ of the
// shared folder). The back-ends are packages of their own, side by side: the masters under
// gbd/master (enum, staged, cbc), the NLP solvers under gbd/nlp (ipm, ipopt); the built-in
// policies are gbd/agent.
//
// Files by role: the model (model.go, atom.go, admissible.go, stagemodel.go, cut.go); the engine
// (engine.go, subproblem.go, compiled.go, lagrangian.go, min1d.go, stagecut.go, hinge.go,
// groundtruth.go);
// the master contract (master.go); Algorithm 2's side of the engine (policy.go: what a policy
// sees and answers; decide.go: turning the answer into ŷ; polish.go); carried cuts (cutpool.go).
//
// # Model
//
// A Problem is the paper's problem (1) with y entering linearly:
//
//	min f(x) + cᵀy  s.t.  g(x) + A y ≤ 0,  h(x) + B y = 0,  x ∈ X,  K y ≤ b,  y ∈ {0,1}^m
//
// f and g are weighted sums of univariate atoms (exp, log, square, cube, power) of affine functions
// of x plus linear terms, so gradients and Hessians are exact and Validate can prove each
// subproblem convex term by term (a concave term, or a cube whose argument can turn negative over
// X, is rejected with ErrNotConvex). h is affine. K y ≤ b (Pure) belongs to the master only and
// defines the admissible set Y_pb, enumerated by EnumerateAdmissible with a pruned depth-first search.
//
// # GBD (paper §II-B)
//
// For y^k the subproblem S(y^k) (eq. 2) is solved by an NLP back-end behind the neutral contract of
// gbd/nlp (Engine.NLP; package gbd speaks no back-end's types and links no C library): by
// default (NewNLP) the native interior-point solver gbd/nlp/ipm; Ipopt (gbd/nlp/ipopt, alone or as the
// native solver's rescue, ipopt.Rescued) adapts itself to the contract in its own package. Both
// run the shared suite of gbd/nlp/nlpsuite. Inequality rows linear in one variable
// become variable bounds (so switched-off units leave the NLP); their multipliers are recovered
// from the reduced gradient. If S(y^k) is infeasible, the feasibility subproblem F(y^k) minimizes
// the total violation (one slack per inequality, a pair per equality so F is always solvable).
// Cuts are the Lagrangian at the NLP solution with y left free, affine in y:
//
//	φ_o(y) = f(x^k) + cᵀy + λᵀ(h(x^k) + B y) + μᵀ(g(x^k) + A y)      μ_B ≥ φ_o(y)   (eq. 3)
//	φ_f(y) =               λ̄ᵀ(h(x̄^k) + B y) + μ̄ᵀ(g(x̄^k) + A y)     φ_f(y) ≤ 0    (eq. 4)
//
// Because x^k minimizes the Lagrangian over X for any y (convexity), both are valid for every y.
// A feasibility cut that does not separate y^k numerically is replaced by the no-good cut of y^k.
//
// Strengthened cuts. The optimality cut the engine adds is stronger than φ_o: the rows that bound
// one variable by a multiple of one binary (a pump's q ≤ Q_max·y_i and q ≥ Q_min·y_i) are kept
// primal when the Lagrangian is minimized, so each such variable is minimized over its box at
// y_i = 0 and at y_i = 1 (Lagrangian.Strengthened; Zou, Ahmed & Sun's strengthened Benders cut).
// The cut is affine in y again, valid for any multipliers by weak duality, never below φ_o at a
// binary y and equal to Z(y^k) at y^k: it prices what switching a running unit off would cost,
// which φ_o (whose multipliers on those rows are zero when the unit runs inside its limits) does
// not. The engine uses it whenever it is not below φ_o at y^k (rounding of the multipliers), and
// carried cuts are strengthened too.
//
// Hinges (hinge.go). A variable that only measures its binaries — a start indicator s with cost
// γ·s and the one row y[b] − y[b−1] − s ≤ 0 — is max(0, y[b] − y[b−1]) at every optimum, which no
// affine cut can say: its row's multiplier charges a start what it credits a stop. When the master
// takes them (HingeTaker), the strengthened and stage cuts are made with such rows' multipliers at
// 0 and carry the exact cost H(y) (Cut.Hinges), which the master adds per assignment or, in the
// staged master, per pair of consecutive stages.
// The master M (eq. 6) gives LBD; S gives UBD; the solve ends when UBD − LBD ≤ ε (StatusOptimal),
// when the master is infeasible without an incumbent (StatusInfeasible), or at the iteration cap or
// deadline (StatusGap with the certified gap UBD − LBD, or StatusNoSolution).
//
// # Certificates
//
// Only an NLP that ended nlp.Solved (scaled KKT residual within its tolerance) feeds UBD or a cut;
// anything short of it is a failure of that evaluation, never an "acceptable" success. Two outcomes
// that valid cuts cannot produce end the solve StatusFailed with the reason in Result.Message,
// keeping the incumbent as a feasible but uncertified point: a master that is infeasible although
// the incumbent's assignment is feasible (a feasibility cut is wrong), and LBD exceeding UBD by
// more than CrossTol relative (an optimality cut is wrong; Result.Crossing says by how much).
// Crossings within CrossTol are rounding in the cuts and are clamped.
//
// # Master back-ends
//
// A master back-end implements Master, and may have the capabilities Cutoff (the engine passes
// UBD − ε), Budgeted, Interruptible, StageTabled and HingeTaker. Package gbd links none: Engine.Master must be
// set. The back-ends are the packages under gbd/master (see its doc), one suite runs on all of
// them, and gbd/master.NewExact picks the exact one for a Y_pb:
//
//	gbd/master/enum    a scan of an enumerated Y_pb, always exact
//	gbd/master/staged  an exact branch and bound over the stages of a Y_pb too large to
//	                   enumerate (ImplicitAdmissible with Stages), with a solution pool; its
//	                   Decoder answers a policy's questions over such a Y_pb exactly
//	gbd/master/cbc     the MILP for CBC, with a time limit and MIP start
//
// # Agent-based GBD (Algorithm 2)
//
// With Engine.Policy set, after each cut the policy sees the MasterView and proposes; Decide turns
// the proposal into ŷ (argmax of the logits over Y_pb, NaN skipped, or per-binary probabilities
// rounded at 0.75/0.25 for the independent-IL agent; undecided or non-admissible means rejected).
// SatisfiesFeasibilityCuts screens ŷ against every feasibility cut at FeasTol, the tolerance the
// masters exclude assignments by; if it violates one the master is solved to optimality. Otherwise
// the master is solved under T_k = T_min + (T_max − T_min)(1 − gap_k/gap_0) with ŷ as MIP start,
// giving (ȳ, μ̄_B, L̄B); ŷ is the next iterate if μ̂_B = max_k φ_o(ŷ) ≤ μ̄_B + ε_tol, else ȳ;
// LBD = max(LBD, L̄B). gap_0 is the first finite gap (before one exists, T_k = T_min). An assignment
// already evaluated is never evaluated again: the master's own point is taken instead, or the master
// is re-solved exactly, which closes the gap because the repeat's cut is already in.
//
// Two settings go beyond the paper, both off by default. Settings.Patience stops asking the policy
// for the rest of a solve after that many proposals in a row lost (classical GBD's exact masters
// from there). Settings.Candidates (MasterView.Candidates) lets a policy that decodes its own
// assignment over a staged Y_pb screen its K best-scored admissible assignments and propose the one
// the optimality cuts value least (gbd/master/staged's Decoder.Screened); the engine treats that
// proposal as any other.
//
// Each proposal gets one outcome (Iteration.Outcome, counted in AgentStats), decided only when the
// master step knows the next iterate, so that "accepted" means the NLP evaluates ŷ next:
//
//	infeasible / undecided / error   rejected before the master; exact master
//	final      passed the screen, but this master step ended the solve (its bound closed the gap,
//	           or the solve was stopped): no next iterate is evaluated, whoever chose it
//	replaced   ȳ won the comparison (the paper's "solver-selected")
//	accepted   ŷ won and is y^{k+1}, a new assignment the next iteration evaluates (the paper's
//	           "agent-selected"); only a deadline or the iteration cap can stop it being evaluated
//	repeat     ŷ won but had been evaluated already, so the master supplied y^{k+1}
//
// # Deadline budgets
//
// With Settings.Deadline set, let R be the time to the deadline minus Budget.Margin (default 1 ms),
// read before every step:
//
//	NLP (S and F):         R·NLPFrac (default R) on the engine's clock, checked every back-end
//	                       iteration through nlp.Options.Stop
//	time-limited master:   T_min' = min(T_min, MasterMinFrac·R), T_max' = min(T_max, MasterMaxFrac·R)
//	                       (defaults 0.1 and 0.5), T_k from the schedule between them
//	exact master:          limit R
//
// When R ≤ 0 before a step the engine returns the best incumbent with StatusGap and its certified
// gap, or StatusNoSolution ("no feasible solution in time"); with R ≤ 0 when Solve is called it
// does no work at all (no master set-up, no carried cuts added, no NLP compiled).
//
// # Deadline rule
//
// Work the engine cannot interrupt is started only when it can end before the deadline, and
// nothing is started after it:
//
//   - NLPs. Every NLP of a subproblem evaluation (S, F, F's monotone retry, S's retry after F found
//     a feasible point) is under the evaluation's limit: an NLP is not started when the shortest
//     set-up of the solve's earlier NLPs (call to first iteration callback: problem creation,
//     initialization, first factorization) would take it past the limit, since it would be
//     stopped at that callback having produced nothing, and the back-end is stopped at its first
//     iteration callback at or past the limit. A subproblem cut short ends
//     the solve (ErrTimeUp, never StatusFailed).
//   - Proposals. The policy is not asked with less time left than twice what a proposal is
//     expected to take on the master's cuts now (ProposalCost, carried from earlier solves by
//     the caller: Settings.Proposal, Result.Proposal; mpc.Controller carries it); the master
//     step is then classical GBD's (AgentStats.Benched). A policy's first proposal can overrun,
//     and one made with over four times the cuts of any measured before.
//   - Masters get the time left as their limit (the exact re-solve after a repeated assignment is
//     skipped when none is left), and the agent's proposal is timed before the master's limit is
//     set. The enum master is a scan (tens of µs for the pump station); CBC polls its limit between
//     nodes.
//   - Recorder runs synchronously after each master step; its time counts against R at the next
//     check, so it must be cheap.
//
// So a solve returns after its deadline by at most the one call in flight when the limit passed,
// less the margin: one back-end iteration or a set-up longer than the shortest one before it, plus
// the back-end's work after its last callback; or the time between two CBC node checks. The daemon's deadline_reserve covers it. The
// tests pin each rule with a fake clock (deadline_test.go). Time the process does not get (a
// thread descheduled by the operating system, a goroutine waiting for the Go scheduler or a GC
// stop) stretches that one call and is outside the bound: on a loaded machine it makes the tail
// (plant/pumpstation's TestMeasureStepOverrun measures it).
//
// The engine does no I/O and owns no goroutines; time comes from Engine.Clock, and every master
// problem is reported to Engine.Recorder for the decision log.
//
// # Carried cuts
//
// Result.Duals holds, for every cut of the solve, the multipliers (μ per inequality, λ per equality)
// behind it. They give cuts for any later problem with the same rows: because y enters linearly,
//
//	q(y) = min_{x∈X} f(x) + cᵀy + μᵀ(g(x) + A y) + λᵀ(h(x) + B y) = L_min + (c + Aᵀμ + Bᵀλ)ᵀy
//
// with L_min the minimum over X of the y-free part, and for every y feasible for S(y) any feasible
// x lies in X with g ≤ 0 and h = 0, so q(y) ≤ f(x) + cᵀy and q(y) ≤ Z(y) (weak duality) for any
// μ ≥ 0 and λ: μ_B ≥ q(y) is a valid optimality cut. Without the objective, q_F(y) > 0 proves y
// infeasible, so q_F(y) ≤ 0 is a valid feasibility cut. Lagrangian.Cut computes L_min when the
// Lagrangian is separable (each nonlinear term in one variable, like the pump station's), as a sum
// of one-dimensional convex minimizations over the variable bounds, each a certified lower bound
// within 1e-13 relative, with the sum moved down by its rounding bound, so the cut stays on the
// valid side in floating point. A minimum that does not exist (an infinite bound the Lagrangian
// keeps decreasing towards) or a non-separable Lagrangian drops the cut. CutPool keeps the
// multipliers of recent cuts and re-evaluates them for a new problem (Carry, in parallel over
// cuts), after an alignment that the caller supplies (mpc's DualShifter); the result goes into
// Settings.Cuts and the engine marks the cuts Carried with Iter −1. CarryOptions.Deadline bounds
// the re-evaluation: no cut is started after it (mpc gives it a fraction of the step's budget).
package gbd
