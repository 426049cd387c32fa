package ipopt

/*
#include <IpStdCInterface.h>
*/
import "C"

import (
	"runtime/cgo"
	"runtime/debug"
	"unsafe"
)

// solveState is everything the callbacks of one IpoptSolve need. C only ever sees a cgo.Handle to
// it, never a Go pointer. The buffers are allocated once per solve so that the callbacks, which
// run hundreds of times, do not allocate.
type solveState struct {
	p    *Problem
	eval Evaluator

	x, grad, g, jac, lambda, hess []float64

	iterations int
	panic      *CallbackPanicError
	stop       func() bool
}

func newSolveState(p *Problem) *solveState {
	buf := make([]float64, 3*p.N+2*p.M+len(p.JacRow)+len(p.HessRow))
	take := func(n int) []float64 {
		s := buf[:n:n]
		buf = buf[n:]
		return s
	}
	return &solveState{
		p:      p,
		eval:   p.Eval,
		x:      take(p.N),
		grad:   take(p.N),
		g:      take(p.M),
		lambda: take(p.M),
		jac:    take(len(p.JacRow)),
		hess:   take(len(p.HessRow)),
	}
}

func stateOf(ud C.UserDataPtr) *solveState {
	return cgo.Handle(uintptr(ud)).Value().(*solveState)
}

// cFloats views a C array of n doubles as a Go slice, valid only during the callback.
func cFloats(p *C.Number, n int) []float64 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(p)), n)
}

func cIndices(p *C.Index, n int) []int32 {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(p)), n)
}

// guard turns a panic in an Evaluator method into a false return and remembers it; the
// intermediate callback then stops the solve. Unwinding a Go panic through Ipopt's C++ frames
// would crash the process.
func (s *solveState) guard(method string, ok *C.Bool) {
	if r := recover(); r != nil {
		if s.panic == nil {
			s.panic = &CallbackPanicError{Callback: method, Value: r, Stack: debug.Stack()}
		}
		*ok = C.FALSE
	}
}

func cBool(b bool) C.Bool {
	if b {
		return C.TRUE
	}
	return C.FALSE
}

// call runs one Evaluator method at Ipopt's x: refused once an earlier callback has panicked,
// guarded against a panic of its own.
func (s *solveState) call(method string, x *C.Number, n C.Index, eval func() bool) (ok C.Bool) {
	if s.panic != nil {
		return C.FALSE
	}
	defer s.guard(method, &ok)
	copy(s.x, cFloats(x, int(n)))
	return cBool(eval())
}

//export gbdIpoptEvalF
func gbdIpoptEvalF(n C.Index, x *C.Number, newX C.Bool, obj *C.Number, ud C.UserDataPtr) C.Bool {
	s := stateOf(ud)
	return s.call("Objective", x, n, func() bool {
		f, good := s.eval.Objective(s.x)
		*obj = C.Number(f)
		return good
	})
}

//export gbdIpoptEvalGradF
func gbdIpoptEvalGradF(n C.Index, x *C.Number, newX C.Bool, grad *C.Number, ud C.UserDataPtr) C.Bool {
	s := stateOf(ud)
	return s.call("Gradient", x, n, func() bool {
		good := s.eval.Gradient(s.x, s.grad)
		copy(cFloats(grad, int(n)), s.grad)
		return good
	})
}

//export gbdIpoptEvalG
func gbdIpoptEvalG(n C.Index, x *C.Number, newX C.Bool, m C.Index, g *C.Number, ud C.UserDataPtr) C.Bool {
	s := stateOf(ud)
	return s.call("Constraints", x, n, func() bool {
		good := s.eval.Constraints(s.x, s.g)
		copy(cFloats(g, int(m)), s.g)
		return good
	})
}

//export gbdIpoptEvalJacG
func gbdIpoptEvalJacG(n C.Index, x *C.Number, newX C.Bool, m, nele C.Index,
	iRow, jCol *C.Index, values *C.Number, ud C.UserDataPtr) C.Bool {
	s := stateOf(ud)
	if values == nil {
		// Structure request, made once per solve before any value request.
		copy(cIndices(iRow, int(nele)), s.p.JacRow)
		copy(cIndices(jCol, int(nele)), s.p.JacCol)
		return C.TRUE
	}
	return s.call("Jacobian", x, n, func() bool {
		good := s.eval.Jacobian(s.x, s.jac)
		copy(cFloats(values, int(nele)), s.jac)
		return good
	})
}

//export gbdIpoptEvalH
func gbdIpoptEvalH(n C.Index, x *C.Number, newX C.Bool, objFactor C.Number, m C.Index,
	lambda *C.Number, newLambda C.Bool, nele C.Index, iRow, jCol *C.Index, values *C.Number,
	ud C.UserDataPtr) C.Bool {
	s := stateOf(ud)
	if values == nil {
		copy(cIndices(iRow, int(nele)), s.p.HessRow)
		copy(cIndices(jCol, int(nele)), s.p.HessCol)
		return C.TRUE
	}
	if nele == 0 {
		return C.TRUE
	}
	return s.call("Hessian", x, n, func() bool {
		copy(s.lambda, cFloats(lambda, int(m)))
		good := s.eval.Hessian(s.x, float64(objFactor), s.lambda, s.hess)
		copy(cFloats(values, int(nele)), s.hess)
		return good
	})
}

//export gbdIpoptIntermediate
func gbdIpoptIntermediate(algMod, iter C.Index, obj, infPr, infDu, mu, dNorm, regSize,
	alphaDu, alphaPr C.Number, lsTrials C.Index, ud C.UserDataPtr) C.Bool {
	s := stateOf(ud)
	if int(iter) > s.iterations {
		s.iterations = int(iter)
	}
	// Returning false is the only way to make Ipopt stop; it then reports User_Requested_Stop.
	if s.stop != nil && s.panic == nil {
		var stop bool
		func() {
			defer func() {
				if v := recover(); v != nil {
					stop = true
				}
			}()
			stop = s.stop()
		}()
		if stop {
			return cBool(false)
		}
	}
	return cBool(s.panic == nil)
}
