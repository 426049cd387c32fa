// Package bonmin solves a gbd.Problem with Bonmin 1.8 (COIN-OR), the alternative a user would
// pick for a convex MINLP: B-BB (NLP-based branch and bound, Ipopt at every node) or B-OA (outer
// approximation: CBC on the linearizations, Ipopt with the binaries fixed). It is a reference to
// measure package gbd against, not part of the daemon: only cmd/gbdmpc-bonmin and this package's
// tests link it, and it builds only where Bonmin's development files are installed (Debian:
// coinor-libbonmin-dev, pkg-config name bonmin; `make test` installs it).
//
// # Model
//
// A small C++ shim (shim.cpp) copies the problem's structure once into a Bonmin::TMINLP and
// evaluates the atoms in C++, with exact first and second derivatives (the Hessian of the
// Lagrangian's lower triangle) mirroring gbd's Atom.eval, domain errors included. Variables are
// (x, y): x CONTINUOUS within its box (±Inf passed as ±1e20), y BINARY. Constraints are the
// inequality rows, the equality rows and the pure binary rows, each declared linear
// (TMINLP::get_constraints_linearity) when it has no atom, so that B-OA copies it into its MILP
// instead of linearizing it; a row's constant goes into its bound, as Bonmin's outer approximation
// assumes g(x) = J·x for a linear row. The NLP start is gbd's cold start: 0 clamped into the box.
//
// # Options
//
// Solve sets only the algorithm, Bonmin's time_limit, and every log level to 0 (print_level,
// bb_log_level, nlp_log_level, lp_log_level, milp_log_level, oa_log_level, oa_cuts_log_level,
// fp_log_level; sb yes drops Ipopt's banner). A bonmin.opt in the working directory, which Bonmin
// reads by default, is ignored. Everything else keeps Bonmin 1.8.9's default, and in particular
// its stopping tolerances (LibraryDefaults reads them from the linked library; a test checks them
// against this list):
//
//   - allowable_gap 0 and allowable_fraction_gap 0: no gap is accepted, the search ends when the
//     tree is empty;
//   - cutoff_decr 1e-5: a node is pruned when its bound is within 1e-5 of the incumbent, which
//     makes 1e-5 the effective absolute optimality gap;
//   - integer_tolerance 1e-6 (Result.Y is rounded to exact 0/1);
//   - time_limit 1e10 s when Options.TimeLimit is 0 (CPU seconds of the process, not wall time);
//   - Ipopt's tol 1e-8 for every NLP.
//
// One exception, for B-BB only: variable_selection is most-fractional instead of the default
// strong-branching. With strong-branching, Bonmin 1.8.9 aborts the whole process on the 12-binary
// pump station's instance 1 of the ground-truth suite (an assertion in Osi's
// OsiSimpleInteger::createBranch, upper > lower, reached when BonChooseVariable fixes a variable
// infeasible in both directions; open Bonmin issues 40 and 46), and an abort cannot be caught.
//
// # Status
//
// Bonmin's Bab::MipStatuses map to Status: FeasibleOptimal is Optimal, ProvenInfeasible is
// Infeasible, Feasible (an incumbent when a limit stopped it; the time limit is the only one set)
// is TimeLimit, NoSolutionKnown is TimeLimit when 90% of the limit or more has passed and Error
// otherwise, UnboundedOrInfeasible is Error. An exception out of Bonmin, Ipopt or CBC is caught in
// the shim and becomes Error with its message.
//
// # Memory and concurrency
//
// The problem is handed to C as two flat arrays of Go memory without Go pointers, for the call
// only: the shim copies them, and everything it allocates is owned by C++ objects freed before
// bonmin_solve returns; no Go pointer is ever stored in C memory. Solves are serialized by a
// package mutex: Bonmin runs Ipopt with sequential MUMPS, whose Fortran module state is shared
// by every solve in the process (gbd/nlp/ipopt's doc, "Concurrency"). That mutex is not
// gbd/nlp/ipopt's: do not run a Bonmin solve and a gbd solve through Ipopt at the same time in one
// process.
package bonmin
