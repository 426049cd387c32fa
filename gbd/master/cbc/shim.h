// Declarations shared by the cgo preamble (C) and shim.cpp (C++).
#ifndef GBD_CBC_SHIM_H
#define GBD_CBC_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

// Stage codes: which CBC C-interface call was running when something went
// wrong. Kept in sync with stageNames in cgo.go.
enum {
	GBD_STAGE_NONE = 0,
	GBD_STAGE_NEW_MODEL = 1,
	GBD_STAGE_LOAD_PROBLEM = 2,
	GBD_STAGE_SET_INTEGER = 3,
	GBD_STAGE_SET_PARAMETER = 4,
	GBD_STAGE_SET_MIP_START = 5,
	GBD_STAGE_SOLVE = 6,
	GBD_STAGE_QUERY = 7,
	GBD_STAGE_DELETE_MODEL = 8
};

// Raw outcome of one Cbc_solve, copied out before the model is freed so the
// status mapping can live in Go. Only scalars: Go allocates this struct and
// cgo forbids Go memory that holds Go pointers from being passed to C.
typedef struct {
	int status;           // Cbc_status
	int secondary;        // Cbc_secondaryStatus
	int proven_optimal;   // Cbc_isProvenOptimal
	int proven_infeas;    // Cbc_isProvenInfeasible
	int seconds_limit;    // Cbc_isSecondsLimitReached
	int node_limit;       // Cbc_isNodeLimitReached
	int solution_limit;   // Cbc_isSolutionLimitReached
	int abandoned;        // Cbc_isAbandoned
	int cont_unbounded;   // Cbc_isContinuousUnbounded
	int has_solution;     // x was filled
	int num_integers;     // Cbc_getNumIntegers: 0 means CBC took its pure-LP path
	int nodes;            // Cbc_getNodeCount
	int saved_solutions;  // Cbc_numberSavedSolutions
	double obj_value;     // Cbc_getObjValue
	double best_possible; // Cbc_getBestPossibleObjValue
	int failed_stage;     // GBD_STAGE_* of a failure, 0 when none
	int sigint_redelivered;
	char what[256];       // exception text when failed_stage != 0
} gbd_cbc_out;

// gbd_cbc_run builds a model, solves it and frees it in one call. Matrix is
// column-major (Cbc_loadProblem format). params holds nparams pairs of
// NUL-terminated name and value strings back to back. start_idx/start_val
// may be NULL when nstart == 0. x must have room for ncols doubles.
// All pointers are only read (or written, for x/out) during the call.
void gbd_cbc_run(int ncols, int nrows, const int *colstart, const int *rowidx,
                 const double *val, const double *collb, const double *colub,
                 const double *obj, const double *rowlb, const double *rowub,
                 const char *isint, int loglevel, const char *params,
                 int nparams, int nstart, const int *start_idx,
                 const double *start_val, double *x, gbd_cbc_out *out);

// gbd_cbc_flush_stdout lets tests capture what CBC wrote through stdio.
void gbd_cbc_flush_stdout(void);

#ifdef __cplusplus
}
#endif

#endif
