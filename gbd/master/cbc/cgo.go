package cbc

/*
#cgo pkg-config: cbc
#cgo CXXFLAGS: -std=c++11
#include "Cbc_C_Interface.h"
#include "shim.h"

// The Go side hands over []int32 and []float64 as int* and double*, and
// Cbc_loadProblem's starts are CoinBigIndex.
_Static_assert(sizeof(CoinBigIndex) == sizeof(int), "CoinBigIndex must be int");
_Static_assert(sizeof(int) == 4, "int must be 32 bits");
_Static_assert(sizeof(double) == 8, "double must be 64 bits");
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Every CBC call runs on one dedicated, locked OS thread, for two reasons:
//
//   - CBC's C interface is not safe for concurrent use. Cbc_solve runs
//     CbcMain1, whose command-line parser keeps its cursor in process
//     globals (CbcOrClpRead_mode, CbcOrClpReadCommand) and which also uses
//     the globals currentBranchModel and cbcPreProcessPointer; concurrent
//     solves were observed to swap parameters and fail. The SIGINT
//     save/restore in shim.cpp is likewise only coherent without overlap.
//   - A solve allocates and frees 15–25 MB. glibc keeps freed memory in
//     the arena of the thread that freed it, so solves spread over many Go
//     runtime threads grew RSS by ~40 MB (and still rising) over 12k solves
//     on 2 cores, against a ~11 MB plateau on one thread.
//
// The goroutine lives for the rest of the process once the first Solve
// starts it; tests using goleak should ignore solverLoop.
var (
	solverOnce sync.Once
	solverJobs chan *solverJob
)

type solverJob struct {
	fn       func()
	done     chan struct{}
	panicked any
}

func solverLoop() {
	runtime.LockOSThread() // never unlocked: this thread belongs to CBC
	for j := range solverJobs {
		func() {
			defer func() { j.panicked = recover() }()
			j.fn()
		}()
		close(j.done)
	}
}

// onSolverThread runs fn on the CBC thread and waits for it. In a worker process (worker.go) the
// CBC thread is the one serving requests, locked to its thread by serveWorker: fn runs there
// directly, saving a hand-off a solve.
func onSolverThread(fn func()) {
	if servingWorker {
		fn()
		return
	}
	solverOnce.Do(func() {
		solverJobs = make(chan *solverJob)
		go solverLoop()
	})
	j := &solverJob{fn: fn, done: make(chan struct{})}
	solverJobs <- j
	<-j.done
	if j.panicked != nil {
		panic(j.panicked)
	}
}

// stageNames maps GBD_STAGE_* codes to the C call they denote.
var stageNames = [...]string{
	C.GBD_STAGE_NONE:          "",
	C.GBD_STAGE_NEW_MODEL:     "Cbc_newModel",
	C.GBD_STAGE_LOAD_PROBLEM:  "Cbc_loadProblem",
	C.GBD_STAGE_SET_INTEGER:   "Cbc_setInteger",
	C.GBD_STAGE_SET_PARAMETER: "Cbc_setParameter",
	C.GBD_STAGE_SET_MIP_START: "Cbc_setMIPStartI",
	C.GBD_STAGE_SOLVE:         "Cbc_solve",
	C.GBD_STAGE_QUERY:         "Cbc_getColSolution/Cbc_bestSolution",
	C.GBD_STAGE_DELETE_MODEL:  "Cbc_deleteModel",
}

// cModel is a problem already converted to what Cbc_loadProblem wants
// (column-major, C-compatible element types). All slices are Go memory
// without Go pointers inside; the C side only reads them during the call and
// copies what it keeps, so nothing Go-owned is ever retained by C.
type cModel struct {
	ncols, nrows int
	colStart     []int32
	rowIdx       []int32
	val          []float64
	colLB, colUB []float64
	obj          []float64
	rowLB, rowUB []float64
	isInt        []byte
	nInt         int
}

// rawOutcome is gbd_cbc_out in Go form.
type rawOutcome struct {
	status, secondary                      int
	provenOptimal, provenInfeasible        bool
	secondsLimit, nodeLimit, solutionLimit bool
	abandoned, contUnbounded, hasSolution  bool
	numIntegers, nodes, savedSolutions     int
	objValue, bestPossible                 float64
	failedCall, what                       string
	sigintRedelivered                      bool
}

// argBlock packs parameters as name\0value\0... so the C side needs no
// per-string allocation and no Go pointers are stored in C memory.
func argBlock(args []Param) []byte {
	n := 0
	for _, a := range args {
		n += len(a.Name) + len(a.Value) + 2
	}
	b := make([]byte, 0, n+1)
	for _, a := range args {
		b = append(b, a.Name...)
		b = append(b, 0)
		b = append(b, a.Value...)
		b = append(b, 0)
	}
	return append(b, 0) // never empty, so &b[0] is always valid
}

func ptr[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

func cInts(s []int32) *C.int         { return (*C.int)(unsafe.Pointer(ptr(s))) }
func cDoubles(s []float64) *C.double { return (*C.double)(unsafe.Pointer(ptr(s))) }

// run performs one CBC solve under solveMu. x (len ncols) receives the
// incumbent when hasSolution is set. relax drops integrality, which makes
// Cbc_solve take its pure-LP path (Clp only, params ignored).
func (m *cModel) run(relax bool, logLevel int, args []Param, startIdx []int32, startVal []float64, x []float64) rawOutcome {
	block := argBlock(args)
	isInt := m.isInt
	if relax {
		isInt = make([]byte, m.ncols)
	}
	var out C.gbd_cbc_out

	onSolverThread(func() {
		C.gbd_cbc_run(C.int(m.ncols), C.int(m.nrows),
			cInts(m.colStart), cInts(m.rowIdx), cDoubles(m.val),
			cDoubles(m.colLB), cDoubles(m.colUB), cDoubles(m.obj),
			cDoubles(m.rowLB), cDoubles(m.rowUB),
			(*C.char)(unsafe.Pointer(&isInt[0])), C.int(logLevel),
			(*C.char)(unsafe.Pointer(&block[0])), C.int(len(args)),
			C.int(len(startIdx)), cInts(startIdx), cDoubles(startVal),
			cDoubles(x), &out)
	})

	r := rawOutcome{
		status:            int(out.status),
		secondary:         int(out.secondary),
		provenOptimal:     out.proven_optimal != 0,
		provenInfeasible:  out.proven_infeas != 0,
		secondsLimit:      out.seconds_limit != 0,
		nodeLimit:         out.node_limit != 0,
		solutionLimit:     out.solution_limit != 0,
		abandoned:         out.abandoned != 0,
		contUnbounded:     out.cont_unbounded != 0,
		hasSolution:       out.has_solution != 0,
		numIntegers:       int(out.num_integers),
		nodes:             int(out.nodes),
		savedSolutions:    int(out.saved_solutions),
		objValue:          float64(out.obj_value),
		bestPossible:      float64(out.best_possible),
		sigintRedelivered: out.sigint_redelivered != 0,
	}
	if st := int(out.failed_stage); st != 0 {
		r.failedCall = "gbd_cbc_run"
		if st > 0 && st < len(stageNames) {
			r.failedCall = stageNames[st]
		}
		r.what = C.GoString(&out.what[0])
	}
	return r
}

// flushCStdout flushes C stdio so tests can see everything CBC printed.
func flushCStdout() { C.gbd_cbc_flush_stdout() }
