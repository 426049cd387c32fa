// Bonmin shim: a TMINLP holding a copy of a gbd.Problem's structure, evaluated in C++ with exact
// first and second derivatives, and a C entry point that solves it with Bonmin (B-BB or B-OA).
//
// Variables are z = (x[0..nx), y[0..ny)). Constraints are, in this order, the inequality rows
// g_i(x) + A_i y ≤ 0, the equality rows h_j(x) + B_j y = 0 and the pure binary rows K y ≤ b, each
// with its constant term moved to the right-hand side.
// Nothing keeps a pointer to the caller's memory: decode copies the arrays into std::vectors.

#include "shim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "BonBonminSetup.hpp"
#include "BonCbc.hpp"
#include "BonTMINLP.hpp"
#include "CoinError.hpp"

namespace {

using Ipopt::Index;
using Ipopt::Number;

// Atom codes, as gbd.Atom numbers them.
enum { ATOM_EXP = 1, ATOM_LOG = 2, ATOM_SQUARE = 3, ATOM_CUBE = 4, ATOM_POWER = 5 };

// Infinite bounds are passed to Ipopt as ±1e20 (its nlp_*_bound_inf default is ±1e19).
const double kInf = 1e20;

// atom is gbd's Atom.eval: value and first two derivatives at u, false outside the domain.
bool atom(int a, double u, double p, double &v, double &d1, double &d2) {
	switch (a) {
	case ATOM_EXP:
		v = std::exp(u);
		if (std::isinf(v)) return false;
		d1 = d2 = v;
		return true;
	case ATOM_LOG:
		if (!(u > 0)) return false;
		v = std::log(u);
		d1 = 1 / u;
		d2 = -1 / (u * u);
		return true;
	case ATOM_SQUARE:
		v = u * u;
		d1 = 2 * u;
		d2 = 2;
		return true;
	case ATOM_CUBE:
		v = u * u * u;
		d1 = 3 * u * u;
		d2 = 6 * u;
		return true;
	case ATOM_POWER:
		if (u < 0) {
			if (u < -1e-12) return false;
			u = 0;
		}
		if (u == 0) {
			v = d1 = d2 = 0;
			if (p == 1) {
				d1 = 1;
				return true;
			}
			if (p < 2) return false;
			if (p == 2) d2 = 2;
			return true;
		}
		v = std::pow(u, p);
		d1 = p * v / u;
		d2 = p * (p - 1) * v / (u * u);
		return true;
	}
	return false;
}

struct Term {
	int atom;
	double w, p, shift;
	std::vector<int> idx;
	std::vector<double> coef;
	std::vector<int> jac;                // row Jacobian position of each idx entry (rows only)
	std::vector<int> hk1, hk2, hpos;     // ordered pairs (k1, k2) with idx[k1] ≥ idx[k2] → Hessian slot
	double arg(const double *z) const {
		double u = shift;
		for (size_t k = 0; k < idx.size(); k++) u += coef[k] * z[idx[k]];
		return u;
	}
};

struct Expr {
	std::vector<int> idx;      // x indices of the linear part, and y indices (offset by nx)
	std::vector<double> coef;
	std::vector<int> jac;      // row Jacobian position of each idx entry (rows only)
	double cst = 0;
	std::vector<Term> terms;
	bool linear() const {
		for (const Term &t : terms)
			if (t.w != 0) return false;
		return true;
	}
	bool value(const double *z, double &v) const {
		v = cst;
		for (size_t k = 0; k < idx.size(); k++) v += coef[k] * z[idx[k]];
		for (const Term &t : terms) {
			double f, d1, d2;
			if (!atom(t.atom, t.arg(z), t.p, f, d1, d2)) return false;
			v += t.w * f;
		}
		return true;
	}
};

// Reader walks the two arrays encode wrote, failing on any overrun.
struct Reader {
	const int *ints;
	int ni, pi = 0;
	const double *dbls;
	int nd, pd = 0;
	bool ok = true;
	Reader(const int *i, int n, const double *d, int m) : ints(i), ni(n), dbls(d), nd(m) {}
	int i() {
		if (pi >= ni) {
			ok = false;
			return 0;
		}
		return ints[pi++];
	}
	double d() {
		if (pd >= nd) {
			ok = false;
			return 0;
		}
		return dbls[pd++];
	}
};

class Model : public Bonmin::TMINLP {
public:
	int nx = 0, ny = 0, nIneq = 0, nEq = 0, nPure = 0;
	std::vector<double> lo, hi;
	Expr obj;
	std::vector<Expr> rows;           // ineq, eq, pure, without their constants
	std::vector<double> rhs;          // row r is rows[r](z) ≤ rhs[r] (= rhs[r] for an equality)
	std::vector<Index> jRow, jCol;    // Jacobian structure
	std::vector<Index> hRow, hCol;    // Hessian structure (lower triangle)
	std::vector<char> xNonlinear;

	// decode reads the layout of encode (bonmin.go). It checks every count and index.
	bool decode(const int *ints, int ni, const double *dbls, int nd, std::string &err) {
		Reader r(ints, ni, dbls, nd);
		nx = r.i();
		ny = r.i();
		nIneq = r.i();
		nEq = r.i();
		nPure = r.i();
		if (!r.ok || nx < 0 || ny < 0 || nIneq < 0 || nEq < 0 || nPure < 0) {
			err = "bad header";
			return false;
		}
		int n = nx + ny;
		lo.resize(n);
		hi.resize(n);
		for (int k = 0; k < nx; k++) lo[k] = std::max(r.d(), -kInf);
		for (int k = 0; k < nx; k++) hi[k] = std::min(r.d(), kInf);
		for (int k = nx; k < n; k++) lo[k] = 0, hi[k] = 1;
		auto readIdx = [&](int count, int bound, int offset, std::vector<int> &idx) {
			if (count < 0 || count > ni) {
				r.ok = false;
				return;
			}
			for (int k = 0; k < count && r.ok; k++) {
				int j = r.i();
				if (j < 0 || j >= bound) {
					r.ok = false;
					return;
				}
				idx.push_back(j + offset);
			}
		};
		auto readExpr = [&](Expr &e) {
			int nl = r.i(), nyl = r.i(), nt = r.i();
			readIdx(nl, nx, 0, e.idx);
			readIdx(nyl, ny, nx, e.idx);
			for (int k = 0; k < nl + nyl && r.ok; k++) e.coef.push_back(r.d());
			e.cst = r.d();
			if (nt < 0 || nt > ni) r.ok = false;
			for (int k = 0; k < nt && r.ok; k++) {
				Term t;
				t.atom = r.i();
				int na = r.i();
				readIdx(na, nx, 0, t.idx);
				t.w = r.d();
				t.p = r.d();
				t.shift = r.d();
				for (int q = 0; q < na && r.ok; q++) t.coef.push_back(r.d());
				if (t.atom < ATOM_EXP || t.atom > ATOM_POWER) r.ok = false;
				e.terms.push_back(std::move(t));
			}
		};
		readExpr(obj);
		rows.resize(nIneq + nEq);
		for (Expr &e : rows) readExpr(e);
		for (int k = 0; k < nPure && r.ok; k++) {
			Expr e;
			int np = r.i();
			readIdx(np, ny, nx, e.idx);
			for (int q = 0; q < np && r.ok; q++) e.coef.push_back(r.d());
			e.cst = -r.d(); // Σ coef·y − rhs ≤ 0
			rows.push_back(std::move(e));
		}
		if (!r.ok || r.pi != ni || r.pd != nd) {
			err = "malformed problem encoding";
			return false;
		}
		// A row's constant moves into its bound: for a row declared linear, Bonmin's outer
		// approximation copies the Jacobian and the bounds and assumes g(x) = J·x.
		for (Expr &e : rows) {
			rhs.push_back(-e.cst);
			e.cst = 0;
		}
		for (size_t k = nIneq; k < (size_t)(nIneq + nEq); k++)
			if (!rows[k].linear()) {
				err = "an equality row has nonlinear terms";
				return false;
			}
		structure();
		return true;
	}

	// structure builds the Jacobian and Hessian sparsity and every entry's slot.
	void structure() {
		for (size_t r = 0; r < rows.size(); r++) {
			Expr &e = rows[r];
			std::vector<int> cols(e.idx);
			for (const Term &t : e.terms) cols.insert(cols.end(), t.idx.begin(), t.idx.end());
			std::sort(cols.begin(), cols.end());
			cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
			int base = (int)jRow.size();
			for (int c : cols) {
				jRow.push_back((Index)r);
				jCol.push_back((Index)c);
			}
			auto slot = [&](int c) { return base + int(std::lower_bound(cols.begin(), cols.end(), c) - cols.begin()); };
			for (int c : e.idx) e.jac.push_back(slot(c));
			for (Term &t : e.terms)
				for (int c : t.idx) t.jac.push_back(slot(c));
		}
		xNonlinear.assign(nx, 0);
		std::map<std::pair<int, int>, int> h;
		auto hess = [&](Term &t) {
			if (t.w == 0) return;
			for (size_t k1 = 0; k1 < t.idx.size(); k1++) {
				xNonlinear[t.idx[k1]] = 1;
				for (size_t k2 = 0; k2 < t.idx.size(); k2++) {
					if (t.idx[k1] < t.idx[k2]) continue;
					auto key = std::make_pair(t.idx[k1], t.idx[k2]);
					auto it = h.find(key);
					int pos;
					if (it == h.end()) {
						pos = (int)hRow.size();
						h[key] = pos;
						hRow.push_back(key.first);
						hCol.push_back(key.second);
					} else {
						pos = it->second;
					}
					t.hk1.push_back((int)k1);
					t.hk2.push_back((int)k2);
					t.hpos.push_back(pos);
				}
			}
		};
		for (Term &t : obj.terms) hess(t);
		for (int r = 0; r < nIneq; r++)
			for (Term &t : rows[r].terms) hess(t);
	}

	bool get_variables_types(Index n, VariableType *types) override {
		for (Index k = 0; k < n; k++) types[k] = k < nx ? CONTINUOUS : BINARY;
		return true;
	}
	bool get_variables_linearity(Index n, Ipopt::TNLP::LinearityType *types) override {
		for (Index k = 0; k < n; k++) types[k] = (k < nx && xNonlinear[k]) ? Ipopt::TNLP::NON_LINEAR : Ipopt::TNLP::LINEAR;
		return true;
	}
	bool get_constraints_linearity(Index m, Ipopt::TNLP::LinearityType *types) override {
		for (Index r = 0; r < m; r++) types[r] = rows[r].linear() ? Ipopt::TNLP::LINEAR : Ipopt::TNLP::NON_LINEAR;
		return true;
	}
	bool get_nlp_info(Index &n, Index &m, Index &nnzJac, Index &nnzHess, Ipopt::TNLP::IndexStyleEnum &style) override {
		n = nx + ny;
		m = (Index)rows.size();
		nnzJac = (Index)jRow.size();
		nnzHess = (Index)hRow.size();
		style = Ipopt::TNLP::C_STYLE;
		return true;
	}
	bool get_bounds_info(Index n, Number *xl, Number *xu, Index m, Number *gl, Number *gu) override {
		for (Index k = 0; k < n; k++) xl[k] = lo[k], xu[k] = hi[k];
		for (Index r = 0; r < m; r++) {
			gl[r] = (r >= nIneq && r < nIneq + nEq) ? rhs[r] : -kInf;
			gu[r] = rhs[r];
		}
		return true;
	}
	// The start is gbd's cold start: 0 clamped into the box (y at 0).
	bool get_starting_point(Index n, bool initX, Number *x, bool initZ, Number *, Number *, Index, bool initLambda,
	                        Number *) override {
		if (initZ || initLambda) return false;
		if (initX)
			for (Index k = 0; k < n; k++) x[k] = std::min(std::max(0.0, lo[k]), hi[k]);
		return true;
	}
	bool eval_f(Index, const Number *z, bool, Number &v) override { return obj.value(z, v); }
	bool eval_grad_f(Index n, const Number *z, bool, Number *g) override {
		std::fill(g, g + n, 0.0);
		for (size_t k = 0; k < obj.idx.size(); k++) g[obj.idx[k]] += obj.coef[k];
		for (const Term &t : obj.terms) {
			double f, d1, d2;
			if (!atom(t.atom, t.arg(z), t.p, f, d1, d2)) return false;
			for (size_t k = 0; k < t.idx.size(); k++) g[t.idx[k]] += t.w * d1 * t.coef[k];
		}
		return true;
	}
	bool eval_g(Index, const Number *z, bool, Index m, Number *g) override {
		for (Index r = 0; r < m; r++)
			if (!rows[r].value(z, g[r])) return false;
		return true;
	}
	bool eval_jac_g(Index, const Number *z, bool, Index, Index nele, Index *rowsOut, Index *colsOut, Number *v) override {
		if (v == NULL) {
			std::copy(jRow.begin(), jRow.end(), rowsOut);
			std::copy(jCol.begin(), jCol.end(), colsOut);
			return true;
		}
		std::fill(v, v + nele, 0.0);
		for (const Expr &e : rows) {
			for (size_t k = 0; k < e.idx.size(); k++) v[e.jac[k]] += e.coef[k];
			for (const Term &t : e.terms) {
				double f, d1, d2;
				if (!atom(t.atom, t.arg(z), t.p, f, d1, d2)) return false;
				for (size_t k = 0; k < t.idx.size(); k++) v[t.jac[k]] += t.w * d1 * t.coef[k];
			}
		}
		return true;
	}
	bool eval_h(Index, const Number *z, bool, Number sigma, Index, const Number *lambda, bool, Index nele, Index *rowsOut,
	            Index *colsOut, Number *v) override {
		if (v == NULL) {
			std::copy(hRow.begin(), hRow.end(), rowsOut);
			std::copy(hCol.begin(), hCol.end(), colsOut);
			return true;
		}
		std::fill(v, v + nele, 0.0);
		auto add = [&](const Term &t, double scale) {
			if (t.w == 0 || scale == 0) return true;
			double f, d1, d2;
			if (!atom(t.atom, t.arg(z), t.p, f, d1, d2)) return false;
			double s = scale * t.w * d2;
			for (size_t q = 0; q < t.hpos.size(); q++) v[t.hpos[q]] += s * t.coef[t.hk1[q]] * t.coef[t.hk2[q]];
			return true;
		};
		for (const Term &t : obj.terms)
			if (!add(t, sigma)) return false;
		for (int r = 0; r < nIneq; r++)
			for (const Term &t : rows[r].terms)
				if (!add(t, lambda[r])) return false;
		return true;
	}
	bool eval_gi(Index, const Number *z, bool, Index i, Number &gi) override {
		if (i < 0 || i >= (Index)rows.size()) return false;
		return rows[i].value(z, gi);
	}
	bool eval_grad_gi(Index, const Number *z, bool, Index i, Index &nele, Index *cols, Number *v) override {
		if (i < 0 || i >= (Index)rows.size()) return false;
		Index first = (Index)(std::lower_bound(jRow.begin(), jRow.end(), i) - jRow.begin());
		Index last = (Index)(std::upper_bound(jRow.begin(), jRow.end(), i) - jRow.begin());
		nele = last - first;
		if (v == NULL) {
			if (cols != NULL) std::copy(jCol.begin() + first, jCol.begin() + last, cols);
			return true;
		}
		std::fill(v, v + nele, 0.0);
		const Expr &e = rows[i];
		for (size_t k = 0; k < e.idx.size(); k++) v[e.jac[k] - first] += e.coef[k];
		for (const Term &t : e.terms) {
			double f, d1, d2;
			if (!atom(t.atom, t.arg(z), t.p, f, d1, d2)) return false;
			for (size_t k = 0; k < t.idx.size(); k++) v[t.jac[k] - first] += t.w * d1 * t.coef[k];
		}
		return true;
	}
	void finalize_solution(Bonmin::TMINLP::SolverReturn, Index, const Number *, Number) override {}
	const BranchingInfo *branchingInfo() const override { return NULL; }
	const SosInfo *sosConstraints() const override { return NULL; }
	bool hasLinearObjective() override { return obj.linear(); }
};

// Setup is Bonmin's setup without its options file: BabSetupBase::initialize otherwise reads
// bonmin.opt from the working directory, and a stray file would change what is measured.
class Setup : public Bonmin::BonminSetup {
public:
	void readOptionsFile() override {}
};

void setMessage(bonmin_result *res, const std::string &msg) {
	std::snprintf(res->message, sizeof res->message, "%s", msg.c_str());
}

// quiet sets every log level of Bonmin and its sub-solvers to 0 and drops Ipopt's banner.
bool quiet(Ipopt::SmartPtr<Ipopt::OptionsList> o, std::string &err) {
	const char *levels[] = {"print_level",      "bonmin.bb_log_level",  "bonmin.nlp_log_level",
	                        "bonmin.lp_log_level", "bonmin.milp_log_level", "bonmin.oa_log_level",
	                        "bonmin.oa_cuts_log_level", "bonmin.fp_log_level"};
	for (const char *l : levels)
		if (!o->SetIntegerValue(l, 0)) {
			err = std::string("cannot set option ") + l;
			return false;
		}
	if (!o->SetStringValue("sb", "yes")) {
		err = "cannot set option sb";
		return false;
	}
	return true;
}

// guarded runs f, turning every exception Bonmin and its libraries throw into a message.
template <class F> bool guarded(F f, std::string &err) {
	try {
		f();
		return true;
	} catch (CoinError &e) { // OsiTMINLPInterface::SimpleError too
		err = "CoinError: " + e.className() + "::" + e.methodName() + ": " + e.message();
	} catch (Bonmin::TNLPSolver::UnsolvedError *e) {
		err = "Bonmin: NLP unsolved: " + e->solverName() + " " + e->errorName();
		delete e;
	} catch (Ipopt::IpoptException &e) {
		err = "Ipopt: " + e.Message();
	} catch (std::exception &e) {
		err = std::string("exception: ") + e.what();
	} catch (...) {
		err = "unknown exception from Bonmin";
	}
	return false;
}

} // namespace

extern "C" int bonmin_solve(const int *ints, int nints, const double *dbls, int ndbls, int algorithm,
                            double time_limit, double *sol, int nsol, bonmin_result *res) {
	std::memset(res, 0, sizeof *res);
	res->status = BONMIN_ERROR;
	res->objective = res->bound = NAN;
	std::string err;
	bool ok = guarded(
	    [&] {
		    Ipopt::SmartPtr<Model> model = new Model();
		    if (!model->decode(ints, nints, dbls, ndbls, err)) return;
		    if (nsol != model->nx + model->ny) {
			    err = "solution buffer has the wrong length";
			    return;
		    }
		    Setup setup;
		    setup.initializeOptionsAndJournalist();
		    Ipopt::SmartPtr<Ipopt::OptionsList> o = setup.options();
		    if (!quiet(o, err)) return;
		    if (!o->SetStringValue("bonmin.algorithm", algorithm == BONMIN_B_OA ? "B-OA" : "B-BB") ||
		        !o->SetNumericValue("bonmin.time_limit", time_limit)) {
			    err = "cannot set algorithm or time limit";
			    return;
		    }
		    // B-BB's default, strong-branching, can abort the process: its BonChooseVariable
		    // fixes a variable found infeasible in both directions twice, and Osi's
		    // OsiSimpleInteger::createBranch asserts upper > lower (Bonmin issues 40 and 46).
		    if (algorithm == BONMIN_B_BB && !o->SetStringValue("bonmin.variable_selection", "most-fractional")) {
			    err = "cannot set variable_selection";
			    return;
		    }
		    setup.initialize(Ipopt::GetRawPtr(model));
		    Bonmin::Bab bb;
		    bb(setup);
		    switch (bb.mipStatus()) {
		    case Bonmin::Bab::FeasibleOptimal: res->status = BONMIN_OPTIMAL; break;
		    case Bonmin::Bab::ProvenInfeasible: res->status = BONMIN_INFEASIBLE; break;
		    case Bonmin::Bab::Feasible: res->status = BONMIN_FEASIBLE; break;
		    case Bonmin::Bab::UnboundedOrInfeasible: res->status = BONMIN_UNBOUNDED; break;
		    default: res->status = BONMIN_NO_SOLUTION; break;
		    }
		    res->nodes = bb.numNodes();
		    res->bound = bb.bestBound();
		    if (bb.bestSolution() != NULL) {
			    std::copy(bb.bestSolution(), bb.bestSolution() + nsol, sol);
			    res->objective = bb.bestObj();
		    }
	    },
	    err);
	if (!ok || !err.empty()) {
		res->status = BONMIN_ERROR;
		setMessage(res, err);
	}
	return res->status;
}

extern "C" int bonmin_defaults(double out[6]) {
	std::string err;
	bool ok = guarded(
	    [&] {
		    Setup setup;
		    setup.initializeOptionsAndJournalist();
		    const char *names[] = {"bonmin.allowable_gap", "bonmin.allowable_fraction_gap", "bonmin.cutoff_decr",
		                           "bonmin.integer_tolerance", "bonmin.time_limit", "tol"};
		    for (int k = 0; k < 6; k++) {
			    double v = NAN;
			    setup.options()->GetNumericValue(names[k], v, "");
			    out[k] = v;
		    }
	    },
	    err);
	return ok ? 0 : -1;
}
