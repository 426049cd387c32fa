// Package ipopt is a thin, safe cgo binding to the C interface of Ipopt (IpStdCInterface.h) as
// shipped by Debian (coinor-libipopt-dev 3.11.9, linked against sequential MUMPS 5.5). The GBD
// loop uses it to solve the continuous NLP subproblem for fixed binaries and to obtain the
// multipliers its Benders cuts are built from.
//
// One call does everything: Solve validates the problem in Go, creates an IpoptProblem, sets the
// options, runs IpoptSolve with Go callbacks and frees the problem again. The Evaluator is reached
// from C through a runtime/cgo.Handle; no Go pointer is stored in C memory, panics in callbacks
// are recovered and returned as *CallbackPanicError, and callbacks do not allocate.
//
// # Sign convention of the multipliers (verified in 3.11.9 by the package tests)
//
// With λ = Result.MultG, z_L = Result.MultXL and z_U = Result.MultXU the Lagrangian is
//
//	L(x, λ, z_L, z_U) = f(x) + Σ_i λ_i g_i(x) − Σ_j z_Lj (x_j − XL_j) + Σ_j z_Uj (x_j − XU_j)
//
// and at a solution ∇f + Jᵀλ − z_L + z_U = 0 (checked to 1e-6 by checkKKT in the tests), with
//
//   - λ_i ≥ 0 when the upper side g_i(x) ≤ GU_i is active (e.g. x0+x1 ≤ 2 → λ = +2);
//   - λ_i ≤ 0 when the lower side GL_i ≤ g_i(x) is active (e.g. −x0−x1 ≥ −2 → λ = −2);
//   - λ_i of either sign for an equality GL_i = GU_i; in every case λ_i = −∂f*/∂b_i, the
//     negative sensitivity of the optimal value to the active bound b_i (|x|² s.t.
//     x0+2x1+3x2 = 14 gives λ = −2 = −d(b²/14)/db at b = 14);
//   - λ_i = 0 (to ~1e-9) for inactive constraints;
//   - z_L, z_U ≥ 0 always, nonzero only at an active variable bound; z_L·(x−XL) and
//     z_U·(XU−x) vanish to about Tol.
//
// Ipopt relaxes every bound by bound_relax_factor (1e-8, relative), so at an active constraint
// Result.G may exceed GU (or undercut GL) by about 1e-8·max(1,|bound|). Result.X is projected back
// into [XL, XU] (honor_original_bounds).
//
// Multipliers are not unique when active constraint gradients are linearly dependent (in the
// synthesis subproblem with y5 = 0, x9 − x16 ≤ 0 and −2x9 + 2x16 ≤ 0 coincide); then the split
// between them depends on the algorithm path, although λ stays a valid multiplier.
//
// # Fixed variables
//
// XL_j == XU_j is allowed and handled by Ipopt's default fixed_variable_treatment make_parameter:
// the variable is removed from the problem Ipopt solves, X_j comes back equal to the bound, and
// in 3.11 MultXL_j = MultXU_j = 0. The Evaluator must still fill all Jacobian and Hessian
// entries of fixed columns. A caller that needs the multiplier of a fixed variable computes the
// stationarity residual r_j = ∂f/∂x_j + Σ_i λ_i ∂g_i/∂x_j at Result.X; then z_Lj = max(r_j, 0) and
// z_Uj = max(−r_j, 0) satisfy the convention above.
//
// # After InfeasibleProblemDetected
//
// Result.X is the point where Ipopt's restoration phase stopped, a local minimiser of the
// constraint violation, and Result.Obj is f there. Observed in 3.11.9 (not a documented
// guarantee): MultG, MultXL and MultXU then are the multipliers of the ℓ1 feasibility problem
// min Σ violations scaled by resto_penalty_parameter (default 1000): dividing by 1000 gives
// values in [−1, 1] with the sign convention above, e.g. λ = (707.1, −1000) for x0²+x1² ≤ 1,
// x0+x1 ≥ 3 at x = (1,1)/√2.
//
// # Concurrency
//
// Solve may be called from any number of goroutines, but every call into libipopt — creation,
// options, IpoptSolve, freeing — holds one package-level mutex, so solves run one at a time.
// Without the mutex, the stress test crashed the process in every run (18 of 18 runs, with 2, 6
// and 8 goroutines): segmentation faults inside IpoptSolve, glibc heap corruption ("double free
// or corruption", "unaligned tcache chunk"), and MUMPS aborting with "PB allocation in
// DMUMPS_LOAD_INIT" / "Problem with increments in DMUMPS_LOAD_MEM_UPDATE" and MPI_ABORT, which
// ends the process with exit status 0. Sequential MUMPS keeps Fortran module-level state
// (DMUMPS_LOAD is one such module) shared by all instances, so separate IpoptProblems are not
// independent. With the mutex, the stress test (about 500 solves from 6 goroutines, also under
// -race) gives results bit-identical to sequential solves.
//
// Consequences: concurrent solves do not run in parallel; an Evaluator must not call Solve (it
// would deadlock on the mutex); and Options.MaxCPUSeconds counts the user CPU time of the whole
// process (Ipopt 3.11 uses getrusage), so busy goroutines elsewhere make it fire earlier.
//
// # Options and defaults
//
// The zero Options gives, in this order (Options.Extra is applied last and overrides all):
//
//	option_file_name ""              never read ./ipopt.opt from the working directory
//	sb yes, print_level 0            no banner, no output
//	tol 1e-8, max_iter 3000
//	min_refinement_steps 0           refinement still runs when the residual test asks for it
//	mu_strategy adaptive             unless Options.MonotoneMu
//	mu_oracle probing                unless Options.MonotoneMu
//	acceptable_tol, constr_viol_tol  only when set, Ipopt defaults otherwise
//	max_cpu_time, mu_init            only when set, Ipopt defaults otherwise
//
// Options.WarmStart adds warm_start_init_point yes, warm_start_{bound,slack_bound,mult_bound}_push
// 1e-9 and mu_init 1e-6 (unless MuInit is set): with Ipopt's 1e-3 pushes a restart from a
// solution took 3 (adaptive) or 6–16 (monotone) iterations instead of 1.
//
// Ipopt prints rejected options to stdout (before print_level takes effect); Solve returns
// them as *OptionError. Statuses meaning a malformed call or an internal breakdown come back as
// *SolveError as well; every optimisation outcome is only a Status.
//
// # Performance
//
// A cold solve of the synthesis subproblem (6 variables, 12 constraints) costs milliseconds, not
// the microseconds the problem's size allows (BenchmarkSynthesisSubproblem here, and
// gbd/nlp/nlpsuite's BenchmarkBackends beside the native solver, measure it). The time goes to
// per-call fixed costs, not to the algebra: every MUMPS call pays for a memory estimate
// (dmumps_compute_memory_save) even for an 18×18 system, Ipopt makes one factorisation and two to
// three solves per iteration with its own per-iteration overhead (vector caches, getrusage
// timers), and each solve creates and frees the IpoptProblem and initialises and analyses MUMPS.
// The Go side adds little: the same problem in plain C takes the same time. Fewer iterations
// therefore matter most, hence the adaptive barrier strategy and the warm-start settings.
//
// Ipopt and MUMPS allocate and free their whole workspace on every solve. With glibc's defaults
// the freed memory went back to the kernel each time (madvise, munmap) and the next solve paid it
// in page faults; the package therefore raises glibc's trim and mmap thresholds at initialisation
// (malloc.go), which keeps that workspace in the heap between solves. BenchmarkHeapRetention
// compares both settings in one process. Of what remains, getrusage (Ipopt 3.11's timers, which
// cannot be turned off) and MUMPS's per-call set-up are the largest parts: the reasons for the
// native back-end.
package ipopt
