package bonmin

/*
#cgo pkg-config: bonmin
#cgo CXXFLAGS: -std=c++11
#include "shim.h"

_Static_assert(sizeof(int) == 4, "int must be 32 bits");
_Static_assert(sizeof(double) == 8, "double must be 64 bits");
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"

	"gbdmpc/gbd"
)

// Algorithm is the Bonmin algorithm a solve runs.
type Algorithm int

const (
	// BBB is B-BB, NLP-based branch and bound (Ipopt at every node).
	BBB Algorithm = iota
	// BOA is B-OA, outer approximation (CBC on the linearizations, Ipopt for fixed binaries).
	BOA
)

func (a Algorithm) String() string {
	switch a {
	case BBB:
		return "B-BB"
	case BOA:
		return "B-OA"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// ParseAlgorithm accepts bbb or B-BB, boa or B-OA (any case).
func ParseAlgorithm(s string) (Algorithm, error) {
	switch strings.ToLower(s) {
	case "bbb", "b-bb":
		return BBB, nil
	case "boa", "b-oa":
		return BOA, nil
	}
	return 0, fmt.Errorf("unknown Bonmin algorithm %q (have bbb, boa)", s)
}

// Status is how a solve ended.
type Status int

const (
	// Optimal: Bonmin proved its incumbent optimal within its gap tolerances.
	Optimal Status = iota
	// Infeasible: Bonmin proved that no binary assignment is feasible.
	Infeasible
	// TimeLimit: the time limit stopped the search; X, Y and Objective are set when it had an
	// incumbent.
	TimeLimit
	// Error: Bonmin failed (Message says how), or reported an unbounded or infeasible relaxation.
	Error
)

var statusNames = [...]string{Optimal: "optimal", Infeasible: "infeasible", TimeLimit: "time_limit", Error: "error"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Options of a solve. Every other Bonmin option keeps its default (see the package doc); all
// output is off.
type Options struct {
	Algorithm Algorithm
	// TimeLimit is Bonmin's time_limit (0: Bonmin's default, 1e10 s). It is not a deadline:
	// Bonmin counts the process's CPU time (CoinCpuTime, user time from getrusage), not wall
	// time, and checks it between nodes, NLPs and MILPs. On a loaded machine the wall time runs
	// well past it: B-OA stopped at 60.5 s of CPU but 89–119 s of wall time on 40-binary pump
	// stations with a 60 s limit on a shared 2-core machine.
	TimeLimit time.Duration
}

// Result of a solve.
type Result struct {
	Status Status
	// Objective is the incumbent's f(x) + cᵀy (NaN without one).
	Objective float64
	// Bound is Bonmin's best lower bound (Bab::bestBound; ±Inf when it has none).
	Bound float64
	X, Y  []float64 // the incumbent (nil without one); Y rounded to exact 0/1
	Nodes int       // branch-and-bound nodes
	Time  time.Duration
	// Message says why a solve ended in Error, or that a time limit left no incumbent.
	Message string
}

// mu serializes solves: Bonmin runs Ipopt with sequential MUMPS, whose Fortran module state is
// shared by every solve in the process (see gbd/nlp/ipopt's doc, "Concurrency"), and CBC.
var mu sync.Mutex

// Solve solves p, a convex MINLP, with Bonmin. An error means p was refused before Bonmin ran
// (invalid, not convex, too large); a failure of Bonmin itself is a Result with Status Error.
func Solve(p *gbd.Problem, opt Options) (*Result, error) {
	if p == nil {
		return nil, errors.New("bonmin: nil problem")
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("bonmin: %w", err)
	}
	if opt.Algorithm != BBB && opt.Algorithm != BOA {
		return nil, fmt.Errorf("bonmin: unknown algorithm %v", opt.Algorithm)
	}
	if opt.TimeLimit < 0 {
		return nil, fmt.Errorf("bonmin: negative time limit %v", opt.TimeLimit)
	}
	limit := 1e10
	if opt.TimeLimit > 0 {
		limit = opt.TimeLimit.Seconds()
	}
	ints, dbls := encode(p)
	if len(ints) > math.MaxInt32 || len(dbls) > math.MaxInt32 {
		return nil, fmt.Errorf("bonmin: problem %q too large to encode", p.Name)
	}
	n := p.NX + p.NY
	sol := make([]float64, n)
	var res C.bonmin_result

	mu.Lock()
	start := time.Now()
	// ints, dbls and sol are Go memory without Go pointers, passed for the call only: the shim
	// copies ints and dbls and writes sol before it returns.
	C.bonmin_solve((*C.int)(unsafe.Pointer(&ints[0])), C.int(len(ints)),
		(*C.double)(unsafe.Pointer(&dbls[0])), C.int(len(dbls)), C.int(opt.Algorithm), C.double(limit),
		(*C.double)(unsafe.Pointer(&sol[0])), C.int(n), &res)
	elapsed := time.Since(start)
	mu.Unlock()

	out := &Result{Objective: math.NaN(), Bound: bound(float64(res.bound)), Nodes: int(res.nodes), Time: elapsed,
		Message: C.GoString(&res.message[0])}
	incumbent := false
	switch res.status {
	case C.BONMIN_OPTIMAL:
		out.Status, incumbent = Optimal, true
	case C.BONMIN_INFEASIBLE:
		out.Status = Infeasible
	case C.BONMIN_FEASIBLE:
		out.Status, incumbent = TimeLimit, true
	case C.BONMIN_NO_SOLUTION:
		if opt.TimeLimit > 0 && elapsed >= opt.TimeLimit*9/10 {
			out.Status, out.Message = TimeLimit, "time limit reached without an incumbent"
		} else {
			out.Status, out.Message = Error, "Bonmin stopped without a solution before its time limit"
		}
	case C.BONMIN_UNBOUNDED:
		out.Status, out.Message = Error, "Bonmin: continuous relaxation unbounded or infeasible"
	default:
		out.Status = Error
		if out.Message == "" {
			out.Message = "Bonmin failed"
		}
	}
	if incumbent {
		out.Objective = float64(res.objective)
		out.X = sol[:p.NX:p.NX]
		out.Y = make([]float64, p.NY)
		for i, v := range sol[p.NX:] {
			out.Y[i] = math.Round(v)
		}
	}
	return out, nil
}

// bound maps Bonmin's "no bound" (±COIN_DBL_MAX or ±1e50 and beyond) to ±Inf.
func bound(b float64) float64 {
	if b >= 1e50 {
		return math.Inf(1)
	}
	if b <= -1e50 {
		return math.Inf(-1)
	}
	return b
}

// encode writes p into the two arrays Model::decode (shim.cpp) reads:
//
//	ints: NX NY len(Ineq) len(Eq) len(Pure), then per expression (objective, Ineq…, Eq…)
//	      nlin ny nterms, lin x indices, y indices, and per term: atom nargs arg-indices;
//	      then per pure row: n, indices.
//	dbls: XLo XHi, then per expression: lin coefs, y coefs, const, and per term: weight p shift
//	      arg-coefs; then per pure row: coefs, RHS.
func encode(p *gbd.Problem) ([]int32, []float64) {
	ints := []int32{int32(p.NX), int32(p.NY), int32(len(p.Ineq)), int32(len(p.Eq)), int32(len(p.Pure))}
	dbls := append(append([]float64(nil), p.XLo...), p.XHi...)
	expr := func(e *gbd.Expr) {
		ints = append(ints, int32(len(e.Idx)), int32(len(e.YIdx)), int32(len(e.Terms)))
		ints = appendIdx(ints, e.Idx)
		ints = appendIdx(ints, e.YIdx)
		dbls = append(append(append(dbls, e.Coef...), e.YCoef...), e.Const)
		for k := range e.Terms {
			t := &e.Terms[k]
			ints = append(ints, int32(t.Atom), int32(len(t.Idx)))
			ints = appendIdx(ints, t.Idx)
			dbls = append(append(dbls, t.Weight, t.P, t.Shift), t.Coef...)
		}
	}
	expr(&p.Objective)
	for r := range p.Ineq {
		expr(&p.Ineq[r])
	}
	for r := range p.Eq {
		expr(&p.Eq[r])
	}
	for _, row := range p.Pure {
		ints = append(ints, int32(len(row.Idx)))
		ints = appendIdx(ints, row.Idx)
		dbls = append(append(dbls, row.Coef...), row.RHS)
	}
	return ints, dbls
}

func appendIdx(dst []int32, idx []int) []int32 {
	for _, i := range idx {
		dst = append(dst, int32(i))
	}
	return dst
}

// Defaults are the values Bonmin gives its stopping tolerances when they are not set, read from
// the library: what the package doc states.
type Defaults struct {
	AllowableGap, AllowableFractionGap, CutoffDecr, IntegerTolerance, TimeLimit, NLPTol float64
}

// LibraryDefaults reads Defaults from the linked Bonmin.
func LibraryDefaults() (Defaults, error) {
	var v [6]C.double
	mu.Lock()
	rc := C.bonmin_defaults(&v[0])
	mu.Unlock()
	if rc != 0 {
		return Defaults{}, errors.New("bonmin: reading the default options failed")
	}
	return Defaults{float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3]), float64(v[4]), float64(v[5])}, nil
}
