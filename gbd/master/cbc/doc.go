// Package cbc is a thin, safe cgo binding to the C interface of COIN-OR CBC
// (Debian's 2.10.8, Cbc_C_Interface.h) for small MILPs. It is the MILP
// back end of the GBD master problem
//
//	min μ  s.t.  μ ≥ a_k·y + c_k,  a_k·y + c_k ≤ 0,  K y ≤ b,  y binary,
//
// typically 5–12 binaries and 1–200 cuts, solved thousands of times,
// sometimes under a time limit with a MIP start.
//
// One call, Solve, validates the problem in Go (dimensions, NaN/Inf,
// indices, duplicate entries, LB > UB, MIP start, parameters) and returns a
// typed *InputError naming the C call the bad value was meant for; then it
// builds a model, solves it and frees it (Cbc_deleteModel on every path,
// C++ exceptions caught in shim.cpp and returned as *CallError). Slices are
// passed to C only for the duration of the call and copied by CBC; no Go
// pointer is kept in C memory.
//
// # Status mapping
//
// From Cbc_status (s), Cbc_secondaryStatus (ss), Cbc_isProvenOptimal,
// Cbc_isProvenInfeasible, Cbc_isAbandoned, Cbc_isContinuousUnbounded, the
// is{Seconds,Node,Solution}LimitReached flags and whether Cbc_bestSolution
// is non-NULL (the incumbent; solution counts are not needed), in order:
//
//	isAbandoned or s == 2                      → Failed
//	MIP and (ss == 7 or isContinuousUnbounded) → Unbounded
//	isProvenOptimal and an incumbent           → Optimal
//	isProvenInfeasible                         → Infeasible (two checks below)
//	MIP and (s == 1 or s == 5 or a limit flag) → StoppedWithIncumbent if an
//	                                             incumbent, else StoppedNoIncumbent
//	anything else                              → Failed
//
// Two CBC quirks are corrected afterwards:
//
//   - Without integer columns Cbc_solve only runs Clp, and
//     Cbc_isProvenInfeasible is "primal or dual infeasible". A pure LP
//     flagged infeasible is re-solved with a zero objective; if that is
//     feasible the answer is Unbounded.
//   - When the time limit expires inside CglPreProcess (PresetCBC),
//     CBC 2.10.8 returns s = 0, ss = 1, isProvenInfeasible = 1 and no limit
//     flag on feasible problems (seen in 1–2% of 1–4 ms limits on 20-item
//     knapsacks). If the solve's wall time reached TimeLimit, the claim is
//     only kept when the LP relaxation (zero objective) is infeasible too;
//     otherwise the result is StoppedNoIncumbent with Raw.InfeasibleOverruled.
//
// One CBC bug is avoided beforehand: with a MIP start, a time limit that
// expires inside CglPreProcess makes CBC 2.10.8 dereference NULL in
// CglPreProcess::postProcess and kill the process (an agent's time-limited
// master on the 40-binary pump station; TestStartedTimeLimitDoesNotCrash
// replays it). A solve with both a start and a time limit therefore runs
// with "preprocess off", set after Options.Params.
//
// Unbounded means the LP relaxation is unbounded and CBC found no
// infeasibility; for rational data the MILP is then unbounded or infeasible.
//
// # Objective and bound
//
// Obj is recomputed in Go as Obj·X + ObjOffset after rounding integer
// columns that are within 1e-6 of an integer. BestBound never exceeds Obj
// and, for minimisation, never exceeds the true optimum:
//
//   - Optimal with zero gaps: BestBound = Obj.
//   - Stopped, or Optimal on a nonzero gap: the larger of CBC's
//     Cbc_getBestPossibleObjValue (+ offset) and the LP relaxation value,
//     which Solve computes with one extra Clp solve. CBC's value is used
//     only when it is below 1e40 in magnitude and strictly below the
//     incumbent: Cbc_getBestPossibleObjValue returns min(bestPossible,
//     incumbent) (checked in the 2.10.8 binary), and bestPossible can
//     still hold its initial +DBL_MAX when CBC stops early, so a value
//     equal to the incumbent proves nothing.
//   - Infeasible: +Inf. Unbounded, Failed: −Inf.
//
// TestStoppedBoundIsValid checks this against enumeration on knapsacks
// stopped by node limits, 1 ns/1 ms/4 ms wall-clock limits and gaps; a
// 150-instance run (2400 limited solves, both presets) found no bound above
// the optimum and no incumbent below it.
//
// # Defaults and tuning
//
// Always set: "log"/"slog" = LogLevel (0: nothing is printed; checked by
// capturing fds 1 and 2), "timeMode elapsed" (CBC's default is CPU time),
// and with zero gaps "increment 1e-9" (CBC default 1e-5, see
// Options.AbsGap). Options.Params are checked against the value parameters
// this CBC accepts (CBC prints "No match for …" or "<Possible options …>"
// on stdout for unknown names or keyword values and ignores them).
//
// Masters are so small that CBC's fixed costs dominate: before any work a
// solve through Cbc_solve sets up some 250 parameters and message tables
// (CbcMain0/CbcMain1) and allocates tens of MB, the root node costs as much
// again, and a node after it little. CBC's root machinery is the expensive
// part: PresetTiny sets preprocess off, presolve off, cutsOnOff off,
// heuristicsOnOff off, strongBranching 0, trustPseudoCosts 0, trading a few
// expensive nodes for many cheap ones. PresetAuto uses it up to
// TinyMaxIntegers = 32 integer columns and TinyMaxRows = 400 rows.
// BenchmarkMaster12x20 and BenchmarkMaster12x20CBCDefaults measure the two
// side by side, and BenchmarkMaster12x20Ablation puts back one CBC default at
// a time.
//
// BenchmarkMaster12x20 (12 binaries + μ ≥ −1e6, 20 cuts, 4 group rows):
//
//	go test -run '^$' -bench Master12x20 -benchtime 3s ./gbd/master/cbc
//
// When the preset was chosen PresetTiny's median was a few times below CBC's defaults' and its
// tail an order of magnitude shorter; of the defaults, cuts cost the most, then heuristics,
// strong branching, preprocessing, presolve and pseudo-cost trust (no effect once strong
// branching is off). Clp factorisation thresholds ("dense", "small"),
// scaling, node strategy and cut passes made no measurable difference.
//
// # Concurrency
//
// CBC's C interface is not safe for concurrent use: CbcMain1 parses the
// parameters with process-global state (CbcOrClpRead_mode and friends), and
// unserialised concurrent solves were observed to swap parameters (node
// limits ignored), differ in node counts and fail outright. Solve is safe to
// call from many goroutines, but all CBC work runs on one dedicated, locked
// OS thread, one solve at a time; use Options.Threads for parallelism inside
// a solve. The dedicated thread also bounds memory: glibc keeps freed memory
// in per-thread arenas, and solves spread over runtime threads grew RSS
// ~40 MB and rising over 12k solves, against a ~10 MB plateau on one thread.
// The thread's goroutine (solverLoop) lives for the rest of the process;
// goleak users should ignore it. Options.Isolate runs a solve in a worker
// process instead (worker.go): solves in different workers run in parallel,
// and a crash or hang inside CBC ends the worker, not the caller. A worker is
// the caller's own executable started again; its main (and the TestMain of
// tests that solve isolated) calls ServeIfWorker first thing.
//
// # Signals
//
// CbcMain1 and Clp's initialSolve install a SIGINT handler with signal(2)
// and put the previous one back with signal(2), which drops the Go
// runtime's SA_SIGINFO|SA_ONSTACK flags; a later Ctrl-C would then crash the
// process. The shim saves and restores the full sigaction around
// Cbc_solve. Should CBC stop on a SIGINT (s = 5, mapped to Stopped*), the
// signal is re-raised once Go's handler is back, so signal.Notify still sees
// it; but with these parameters CBC does not stop (measured: SIGINT at 50 to
// 300 ms into a 360 ms solve of a recorded 40-binary master, four times, each
// solve ran to its optimum). A solve that
// must end from outside runs isolated, with Options.Interrupt.
package cbc
