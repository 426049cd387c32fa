// C++ side of the binding. It exists for three reasons that plain cgo C cannot
// cover:
//   - C++ exceptions must not unwind through cgo frames (that aborts the whole
//     daemon), so every CBC call runs inside try/catch;
//   - the model must be freed on every path, including exceptional ones;
//   - CbcMain1 (behind Cbc_solve) and Clp's initialSolve install a SIGINT
//     handler with signal(2) and "restore" the previous one with signal(2)
//     too, which silently drops SA_SIGINFO|SA_ONSTACK from the Go runtime's
//     handler. A later Ctrl-C would then enter Go's handler with the wrong
//     calling convention. We snapshot the full sigaction and put it back.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <signal.h>
#include <unistd.h>

#include "CoinError.hpp"
#include "Cbc_C_Interface.h"
#include "shim.h"

namespace {

void setWhat(gbd_cbc_out *out, int stage, const char *msg) {
	out->failed_stage = stage;
	std::snprintf(out->what, sizeof out->what, "%s", msg);
}

// sigintGuard keeps the caller's SIGINT disposition across a solve.
class sigintGuard {
public:
	sigintGuard() { ok_ = sigaction(SIGINT, nullptr, &saved_) == 0; }
	~sigintGuard() {
		if (ok_)
			sigaction(SIGINT, &saved_, nullptr);
	}
	sigintGuard(const sigintGuard &) = delete;
	sigintGuard &operator=(const sigintGuard &) = delete;

private:
	struct sigaction saved_;
	bool ok_;
};

class modelGuard {
public:
	explicit modelGuard(Cbc_Model *m) : m_(m) {}
	~modelGuard() {
		if (m_)
			Cbc_deleteModel(m_);
	}
	Cbc_Model *get() const { return m_; }
	// release frees the model where a failure can still be reported.
	void release() {
		Cbc_Model *m = m_;
		m_ = nullptr;
		Cbc_deleteModel(m);
	}
	modelGuard(const modelGuard &) = delete;
	modelGuard &operator=(const modelGuard &) = delete;

private:
	Cbc_Model *m_;
};

void collect(Cbc_Model *m, int ncols, double *x, gbd_cbc_out *out) {
	out->status = Cbc_status(m);
	out->secondary = Cbc_secondaryStatus(m);
	out->proven_optimal = Cbc_isProvenOptimal(m);
	out->proven_infeas = Cbc_isProvenInfeasible(m);
	out->seconds_limit = Cbc_isSecondsLimitReached(m);
	out->node_limit = Cbc_isNodeLimitReached(m);
	out->solution_limit = Cbc_isSolutionLimitReached(m);
	out->abandoned = Cbc_isAbandoned(m);
	out->cont_unbounded = Cbc_isContinuousUnbounded(m);
	out->num_integers = Cbc_getNumIntegers(m);
	out->nodes = Cbc_getNodeCount(m);
	out->saved_solutions = Cbc_numberSavedSolutions(m);
	out->obj_value = Cbc_getObjValue(m);
	out->best_possible = Cbc_getBestPossibleObjValue(m);

	const double *sol = nullptr;
	if (out->num_integers > 0) {
		// Cbc_bestSolution is NULL exactly when no integer-feasible
		// solution is known, unlike Cbc_getColSolution, which returns
		// whatever the last LP left behind.
		sol = Cbc_bestSolution(m);
	} else if (out->proven_optimal) {
		// The pure-LP path never fills bestSolution.
		sol = Cbc_getColSolution(m);
	}
	if (sol) {
		std::memcpy(x, sol, sizeof(double) * (size_t)ncols);
		out->has_solution = 1;
	}
}

} // namespace

extern "C" void gbd_cbc_run(int ncols, int nrows, const int *colstart,
                            const int *rowidx, const double *val,
                            const double *collb, const double *colub,
                            const double *obj, const double *rowlb,
                            const double *rowub, const char *isint,
                            int loglevel, const char *params, int nparams,
                            int nstart, const int *start_idx,
                            const double *start_val, double *x,
                            gbd_cbc_out *out) {
	std::memset(out, 0, sizeof *out);
	int stage = GBD_STAGE_NEW_MODEL;
	try {
		modelGuard model(Cbc_newModel());
		if (!model.get()) {
			setWhat(out, stage, "returned NULL");
			return;
		}
		Cbc_Model *m = model.get();
		// Before anything else: setLogLevel affects messages printed while
		// parameters are parsed, not only during the search.
		Cbc_setLogLevel(m, loglevel);

		stage = GBD_STAGE_LOAD_PROBLEM;
		Cbc_loadProblem(m, ncols, nrows, colstart, rowidx, val, collb, colub,
		                obj, rowlb, rowub);

		stage = GBD_STAGE_SET_INTEGER;
		for (int j = 0; j < ncols; ++j)
			if (isint[j])
				Cbc_setInteger(m, j);

		stage = GBD_STAGE_SET_PARAMETER;
		const char *p = params;
		for (int i = 0; i < nparams; ++i) {
			const char *name = p;
			p += std::strlen(p) + 1;
			const char *value = p;
			p += std::strlen(p) + 1;
			Cbc_setParameter(m, name, value);
		}

		if (nstart > 0) {
			stage = GBD_STAGE_SET_MIP_START;
			Cbc_setMIPStartI(m, nstart, start_idx, start_val);
		}

		stage = GBD_STAGE_SOLVE;
		{
			sigintGuard keep;
			Cbc_solve(m);
		}

		stage = GBD_STAGE_QUERY;
		collect(m, ncols, x, out);

		stage = GBD_STAGE_DELETE_MODEL;
		model.release();
	} catch (const CoinError &e) {
		char buf[sizeof out->what];
		std::snprintf(buf, sizeof buf, "CoinError %s::%s: %s",
		              e.className().c_str(), e.methodName().c_str(),
		              e.message().c_str());
		setWhat(out, stage, buf);
	} catch (const std::exception &e) {
		setWhat(out, stage, e.what());
	} catch (...) {
		setWhat(out, stage, "unknown C++ exception");
	}
	// Status 5 is "user programmed interruption"; with no event handler of
	// ours registered the only source is CBC's own SIGINT handler, which
	// swallowed a Ctrl-C meant for the process. Hand it to whoever owns
	// SIGINT now that their handler is back.
	if (out->failed_stage == 0 && (out->status == 5 || out->secondary == 5)) {
		out->sigint_redelivered = 1;
		kill(getpid(), SIGINT);
	}
}

extern "C" void gbd_cbc_flush_stdout(void) { std::fflush(stdout); }
