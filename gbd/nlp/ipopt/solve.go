package ipopt

/*
#cgo pkg-config: ipopt
#include <stdint.h>
#include <stdlib.h>
#include <IpStdCInterface.h>

// Implemented in Go (callbacks.go); the signatures match Ipopt's callback typedefs exactly.
extern Bool gbdIpoptEvalF(Index, Number*, Bool, Number*, UserDataPtr);
extern Bool gbdIpoptEvalGradF(Index, Number*, Bool, Number*, UserDataPtr);
extern Bool gbdIpoptEvalG(Index, Number*, Bool, Index, Number*, UserDataPtr);
extern Bool gbdIpoptEvalJacG(Index, Number*, Bool, Index, Index, Index*, Index*, Number*, UserDataPtr);
extern Bool gbdIpoptEvalH(Index, Number*, Bool, Number, Index, Number*, Bool, Index, Index*, Index*, Number*, UserDataPtr);
extern Bool gbdIpoptIntermediate(Index, Index, Number, Number, Number, Number, Number, Number, Number, Number, Index, UserDataPtr);

static IpoptProblem gbd_create(Index n, Number* xl, Number* xu, Index m, Number* gl, Number* gu,
                               Index nele_jac, Index nele_hess) {
	IpoptProblem p = CreateIpoptProblem(n, xl, xu, m, gl, gu, nele_jac, nele_hess, 0,
		gbdIpoptEvalF, gbdIpoptEvalG, gbdIpoptEvalGradF, gbdIpoptEvalJacG, gbdIpoptEvalH);
	if (p != NULL) {
		SetIntermediateCallback(p, gbdIpoptIntermediate);
	}
	return p;
}

// The handle travels as an integer so that Go never converts a non-pointer to unsafe.Pointer.
static enum ApplicationReturnStatus gbd_solve(IpoptProblem p, Number* x, Number* g, Number* obj,
                                              Number* mult_g, Number* mult_xl, Number* mult_xu,
                                              uintptr_t handle) {
	return IpoptSolve(p, x, g, obj, mult_g, mult_xl, mult_xu, (UserDataPtr)handle);
}
*/
import "C"

import (
	"math"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// ipoptMu serialises every call into libipopt. See "Concurrency" in doc.go for why.
var ipoptMu sync.Mutex

// Solve minimises p from x0. warm is read only when opt.WarmStart is set.
//
// The returned error is non-nil when the problem or options are invalid (*ProblemError,
// *OptionError), when a C call fails (*CallError), when an Evaluator method panicked
// (*CallbackPanicError) or when IpoptSolve reports a malformed call or an internal breakdown
// (*SolveError; Result.Status is then set as well). Optimisation outcomes — infeasibility,
// iteration or CPU limit, restoration failure — are reported only in Result.Status.
func Solve(p *Problem, x0 []float64, warm *WarmStart, opt Options) (Result, error) {
	if err := validate(p, x0, warm, &opt); err != nil {
		return Result{}, err
	}
	res := Result{
		X: append([]float64(nil), x0...),
		// Capacity ≥ 1 so that C gets a non-NULL pointer even when M == 0: with
		// warm_start_init_point IpoptSolve throws if mult_g is NULL, whatever M is.
		G:      make([]float64, p.M, max(p.M, 1)),
		MultG:  make([]float64, p.M, max(p.M, 1)),
		MultXL: make([]float64, p.N),
		MultXU: make([]float64, p.N),
	}
	if opt.WarmStart {
		copy(res.MultG, warm.MultG)
		copy(res.MultXL, warm.MultXL)
		copy(res.MultXU, warm.MultXU)
	}
	// Bounds and options are prepared before taking the lock to keep the critical section to
	// the C calls themselves.
	bounds := make([]float64, 2*p.N+2*p.M)
	for j := range p.N {
		bounds[j], bounds[p.N+j] = cBound(p.XL[j]), cBound(p.XU[j])
	}
	for i := range p.M {
		bounds[2*p.N+i], bounds[2*p.N+p.M+i] = cBound(p.GL[i]), cBound(p.GU[i])
	}
	opts := opt.list()
	st := newSolveState(p)
	st.stop = opt.Stop
	h := cgo.NewHandle(st)
	defer h.Delete()

	ipoptMu.Lock()
	defer ipoptMu.Unlock()
	// The wait for the lock (another plant's solve) is not inside Ipopt, where Stop is asked at
	// every iteration: ask it once here, so a caller whose time ran out while waiting does not
	// pay for a problem's set-up and first iteration. The result is what a stop at the first
	// iteration gives: x0, no iterations.
	if opt.Stop != nil && opt.Stop() {
		res.Status = UserRequestedStop
		return res, nil
	}

	cp := C.gbd_create(C.Index(p.N), floatPtr(bounds[:p.N]), floatPtr(bounds[p.N:2*p.N]),
		C.Index(p.M), floatPtr(bounds[2*p.N:2*p.N+p.M]), floatPtr(bounds[2*p.N+p.M:]),
		C.Index(len(p.JacRow)), C.Index(len(p.HessRow)))
	if cp == nil {
		return Result{}, &CallError{Call: "CreateIpoptProblem", Detail: "returned NULL"}
	}
	defer C.FreeIpoptProblem(cp)

	if err := addOptions(cp, opts); err != nil {
		return Result{}, err
	}

	var obj C.Number
	status := Status(C.gbd_solve(cp, floatPtr(res.X), floatPtr(res.G), &obj,
		floatPtr(res.MultG), floatPtr(res.MultXL), floatPtr(res.MultXU), C.uintptr_t(h)))
	res.Status = status
	res.Obj = float64(obj)
	res.Iterations = st.iterations
	if st.panic != nil {
		return res, st.panic
	}
	if status.failure() {
		return res, &SolveError{Status: status}
	}
	return res, nil
}

// addOptions must run with ipoptMu held.
func addOptions(cp C.IpoptProblem, opts []Option) error {
	for _, o := range opts {
		name := C.CString(o.Name)
		var ok C.Bool
		var call string
		switch v := o.Value.(type) {
		case string:
			call = "AddIpoptStrOption"
			val := C.CString(v)
			ok = C.AddIpoptStrOption(cp, name, val)
			C.free(unsafe.Pointer(val))
		case int:
			call = "AddIpoptIntOption"
			if v < math.MinInt32 || v > math.MaxInt32 {
				ok = C.FALSE
			} else {
				ok = C.AddIpoptIntOption(cp, name, C.Int(v))
			}
		case float64:
			call = "AddIpoptNumOption"
			ok = C.AddIpoptNumOption(cp, name, C.Number(v))
		}
		C.free(unsafe.Pointer(name))
		if ok == C.FALSE {
			return &OptionError{Call: call, Name: o.Name, Value: o.Value}
		}
	}
	return nil
}

// floatPtr passes a Go slice's backing array to C for the duration of one call; it is NULL only
// for a slice without backing array.
func floatPtr(s []float64) *C.Number {
	return (*C.Number)(unsafe.Pointer(unsafe.SliceData(s)))
}

// Compile-time proof that Status mirrors enum ApplicationReturnStatus: every index below is a
// constant that must be exactly 0, or the array index is out of range and the build fails.
func _() {
	var x [1]struct{}
	_ = x[int(Solved)-C.Solve_Succeeded]
	_ = x[int(SolvedToAcceptableLevel)-C.Solved_To_Acceptable_Level]
	_ = x[int(InfeasibleProblemDetected)-C.Infeasible_Problem_Detected]
	_ = x[int(SearchDirectionTooSmall)-C.Search_Direction_Becomes_Too_Small]
	_ = x[int(DivergingIterates)-C.Diverging_Iterates]
	_ = x[int(UserRequestedStop)-C.User_Requested_Stop]
	_ = x[int(FeasiblePointFound)-C.Feasible_Point_Found]
	_ = x[int(MaximumIterationsExceeded)-C.Maximum_Iterations_Exceeded]
	_ = x[int(RestorationFailed)-C.Restoration_Failed]
	_ = x[int(ErrorInStepComputation)-C.Error_In_Step_Computation]
	_ = x[int(MaximumCpuTimeExceeded)-C.Maximum_CpuTime_Exceeded]
	_ = x[int(NotEnoughDegreesOfFreedom)-C.Not_Enough_Degrees_Of_Freedom]
	_ = x[int(InvalidProblemDefinition)-C.Invalid_Problem_Definition]
	_ = x[int(InvalidOption)-C.Invalid_Option]
	_ = x[int(InvalidNumberDetected)-C.Invalid_Number_Detected]
	_ = x[int(UnrecoverableException)-C.Unrecoverable_Exception]
	_ = x[int(NonIpoptExceptionThrown)-C.NonIpopt_Exception_Thrown]
	_ = x[int(InsufficientMemory)-C.Insufficient_Memory]
	_ = x[int(InternalError)-C.Internal_Error]
}
