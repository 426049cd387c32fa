// C interface of the Bonmin shim (shim.cpp). Nothing here keeps a pointer after a call returns.
#ifndef GBDMPC_BONMIN_SHIM_H
#define GBDMPC_BONMIN_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

// Outcome of bonmin_solve (Bonmin::Bab::MipStatuses, plus an error code for a failure of the shim
// or an exception out of Bonmin).
enum {
	BONMIN_OPTIMAL = 0,      // FeasibleOptimal
	BONMIN_INFEASIBLE = 1,   // ProvenInfeasible
	BONMIN_FEASIBLE = 2,     // Feasible: a solution, optimality not proven (a limit stopped it)
	BONMIN_UNBOUNDED = 3,    // UnboundedOrInfeasible
	BONMIN_NO_SOLUTION = 4,  // NoSolutionKnown
	BONMIN_ERROR = 5
};

enum { BONMIN_B_BB = 0, BONMIN_B_OA = 1 };

typedef struct {
	int status;
	int nodes;
	double objective;
	double bound;
	char message[512];
} bonmin_result;

// bonmin_solve decodes the problem from ints/dbls (the layout is written by encode in bonmin.go
// and read by Model::decode in shim.cpp), solves it and writes the best solution (x then y, nx+ny
// values) into sol when there is one. It returns res->status.
int bonmin_solve(const int *ints, int nints, const double *dbls, int ndbls, int algorithm,
                 double time_limit, double *sol, int nsol, bonmin_result *res);

// bonmin_defaults writes the values Bonmin gives its stopping tolerances when nothing is set:
// allowable_gap, allowable_fraction_gap, cutoff_decr, integer_tolerance, time_limit,
// and Ipopt's tol inside Bonmin. Returns 0, or -1 on an exception.
int bonmin_defaults(double out[6]);

#ifdef __cplusplus
}
#endif

#endif
