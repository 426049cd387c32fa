package cbc

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Problem is a minimisation MILP: min Obj·x + ObjOffset subject to
// RowLB ≤ A x ≤ RowUB, ColLB ≤ x ≤ ColUB, x_j integer where Integer[j].
type Problem struct {
	NumCols      int
	ColLB, ColUB []float64 // ±Inf allowed
	Obj          []float64 // finite
	Integer      []bool    // len NumCols, or nil for a pure LP
	// Rows in compressed sparse row form: row r has entries
	// RowIdx[RowStart[r]:RowStart[r+1]]; len(RowStart) = rows+1 (nil when
	// there are no rows). A column may appear at most once per row.
	RowStart     []int32
	RowIdx       []int32
	RowVal       []float64
	RowLB, RowUB []float64 // ±Inf allowed; equal for equalities
	ObjOffset    float64   // added to Result.Obj and Result.BestBound
}

// NumRows is len(p.RowLB).
func (p *Problem) NumRows() int { return len(p.RowLB) }

// Param is one raw CBC command-line style parameter, passed to
// Cbc_setParameter as name/value. See Options.Params for what is accepted.
type Param struct{ Name, Value string }

// Preset selects the parameter set applied before Options.Params.
type Preset int

const (
	// PresetAuto uses PresetTiny for problems with at most TinyMaxIntegers
	// integer columns and TinyMaxRows rows, PresetCBC otherwise.
	PresetAuto Preset = iota
	// PresetTiny switches off CBC machinery whose fixed cost dominates on
	// tiny GBD masters (see doc.go for the measurements).
	PresetTiny
	// PresetCBC keeps CBC's own defaults.
	PresetCBC
)

// Size limits for PresetAuto choosing PresetTiny.
const (
	TinyMaxIntegers = 32
	TinyMaxRows     = 400
)

// Options tunes one Solve. The zero value is: no time or node limit, one
// thread, silent, optimality proven (see AbsGap), PresetAuto.
type Options struct {
	// TimeLimit is a wall-clock limit (CBC timeMode "elapsed"; CBC's own
	// default counts CPU seconds). 0 means none. CBC polls it between nodes
	// and inside heuristics, so a solve overruns it by up to one node or
	// heuristic pass, plus the model's set-up and, when stopped, one LP
	// solve for the bound.
	TimeLimit time.Duration
	// MaxNodes stops branch and bound after this many nodes; 0 means none.
	MaxNodes int
	// Start is a MIP start over all columns (nil = none). Only integer
	// columns are handed to CBC (Cbc_setMIPStartI); CBC recomputes the
	// continuous ones by an LP with the integers fixed. Integer entries must
	// be integral (within 1e-6) and within bounds. If the fixed LP is
	// infeasible CBC silently drops the start. Ignored for pure LPs. With a
	// TimeLimit too, CBC's preprocessing is off whatever Params say: CBC
	// 2.10.8 crashes the process (NULL dereference in
	// CglPreProcess::postProcess) when the limit expires while it
	// preprocesses a started solve.
	Start []float64
	// Threads for CBC's parallel tree search; 0 and 1 mean serial. Since
	// solves are serialised package-wide (see doc.go), this is the only way
	// to use more than one core.
	Threads int
	// LogLevel is CBC's log level; 0 (default) prints nothing.
	LogLevel int
	// Isolate runs the solve in a worker process (worker.go): a crash inside CBC fails the solve
	// with a *WorkerError instead of ending the caller's process, a solve far past its TimeLimit
	// is killed (OverrunGrace), and solves in different workers run in parallel. The binary's main
	// must call ServeIfWorker first thing.
	Isolate bool
	// Interrupt, with Isolate, is asked every few milliseconds while the worker solves; once it
	// says true the worker is killed and the solve returns StoppedNoIncumbent (no incumbent, bound
	// −Inf) at once. CBC itself offers no way to stop a solve from outside (it ignores SIGINT with
	// these parameters, measured). Not sent to the worker.
	Interrupt func() bool
	// AbsGap and RelGap stop the search once incumbent − bound ≤ AbsGap or
	// ≤ RelGap·max(|incumbent|, |bound|) (CBC "allowableGap", "ratioGap").
	// Both zero keeps CBC's allowableGap 1e-10 and ratioGap 0 and lowers
	// CBC's cutoff increment from 1e-5 to 1e-9: CBC prunes nodes within the
	// increment of the incumbent, so with its default "Optimal" would only
	// mean optimal to 1e-5 absolute. (CBC still raises the increment itself
	// when all objective coefficients are integral, which is exact.)
	AbsGap, RelGap float64
	// Preset picks the parameter set; zero value PresetAuto.
	Preset Preset
	// Params are raw Cbc_setParameter pairs applied last, so they override
	// everything above (but for preprocessing of a started, time-limited
	// solve; see Start). Names are CBC 2.10 value parameters (full name or
	// its shortest accepted abbreviation, e.g. "cuts"/"cutsOnOff");
	// actions and parameters that write files or print are rejected, as are
	// values CBC would refuse to parse (CBC prints those on stdout).
	Params []Param
}

// Status is the outcome of a Solve.
type Status int

// The zero Status is Failed so that an unset Result never reads as Optimal.
const (
	Failed               Status = iota // numerical trouble or an unrecognised CBC state
	Optimal                            // proven optimal (within AbsGap/RelGap)
	StoppedWithIncumbent               // time/node limit hit, feasible X known
	StoppedNoIncumbent                 // time/node limit hit, nothing feasible known
	Infeasible                         // proven infeasible
	Unbounded                          // LP relaxation unbounded (MIP unbounded if feasible)
)

var statusNames = [...]string{"Failed", "Optimal", "StoppedWithIncumbent", "StoppedNoIncumbent", "Infeasible", "Unbounded"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// HasIncumbent reports whether Result.X holds a feasible point.
func (s Status) HasIncumbent() bool { return s == Optimal || s == StoppedWithIncumbent }

// Raw is what CBC itself reported, for logs and diagnosis.
type Raw struct {
	Status, SecondaryStatus int     // Cbc_status, Cbc_secondaryStatus
	ProvenOptimal           bool    // Cbc_isProvenOptimal
	ProvenInfeasible        bool    // Cbc_isProvenInfeasible
	SecondsLimitReached     bool    // Cbc_isSecondsLimitReached
	NodeLimitReached        bool    // Cbc_isNodeLimitReached
	BestPossible            float64 // Cbc_getBestPossibleObjValue, without offset
	ObjValue                float64 // Cbc_getObjValue, without offset
	LPPath                  bool    // no integer columns: CBC only ran Clp
	LPBound                 float64 // own LP-relaxation bound when stopped (NaN if not computed)
	SIGINTRedelivered       bool    // CBC swallowed a SIGINT; it was re-raised
	// InfeasibleOverruled: CBC claimed infeasibility after the time limit
	// with a feasible LP relaxation, which CBC 2.10.8 does when the limit
	// expires during preprocessing; reported as StoppedNoIncumbent.
	InfeasibleOverruled bool
}

// Result of a Solve.
type Result struct {
	Status Status
	// X is the incumbent (nil when none); integer columns are rounded to
	// exact integers.
	X []float64
	// Obj is Obj·X + ObjOffset; +Inf when there is no incumbent, −Inf when
	// Unbounded.
	Obj float64
	// BestBound is a proven lower bound on the optimum, including
	// ObjOffset. It never exceeds Obj. Optimal: equals Obj when both gaps
	// are zero. Stopped: the larger of CBC's Cbc_getBestPossibleObjValue
	// (when CBC actually established one) and the LP relaxation; −Inf if
	// neither is available. Infeasible: +Inf. Unbounded and Failed: −Inf.
	BestBound float64
	Nodes     int
	Raw       Raw
}

// ErrInvalid is matched by errors.Is for every *InputError.
var ErrInvalid = errors.New("cbc: invalid input")

// ErrCall is matched by errors.Is for every *CallError.
var ErrCall = errors.New("cbc: CBC call failed")

// InputError reports a Problem or Options value rejected in Go before it
// could reach CBC.
type InputError struct {
	Call  string // the C call the value was meant for, e.g. "Cbc_loadProblem"
	Field string // e.g. "RowIdx", "Options.Start"
	Index int    // element index, or -1
	Msg   string
}

func (e *InputError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("cbc: %s: %s[%d]: %s", e.Call, e.Field, e.Index, e.Msg)
	}
	return fmt.Sprintf("cbc: %s: %s: %s", e.Call, e.Field, e.Msg)
}

func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// CallError reports that a CBC call failed outright (NULL model, C++
// exception). The model was freed regardless.
type CallError struct {
	Call string
	Msg  string
}

func (e *CallError) Error() string { return fmt.Sprintf("cbc: %s failed: %s", e.Call, e.Msg) }

func (e *CallError) Is(target error) bool { return target == ErrCall }

// Solve validates p and opt, builds a CBC model, solves it and frees it.
// Solver outcomes (infeasible, stopped, ...) are reported in Result.Status
// with a nil error; errors are *InputError or *CallError only (and
// *WorkerError with Options.Isolate).
// Safe for concurrent use, but solves are serialised (see doc.go).
func Solve(p *Problem, opt Options) (Result, error) {
	if opt.Isolate {
		return solveIsolated(p, opt)
	}
	fail := noAnswer(Failed)
	if err := validateProblem(p); err != nil {
		return fail, err
	}
	if err := validateOptions(p, &opt); err != nil {
		return fail, err
	}
	m := toColumnMajor(p)
	args := buildArgs(p, m.nInt, &opt)
	startIdx, startVal := mipStart(p, opt.Start)

	x := make([]float64, p.NumCols)
	t0 := time.Now()
	raw := m.run(false, opt.LogLevel, args, startIdx, startVal, x)
	elapsed := time.Since(t0)
	if raw.failedCall != "" {
		return fail, &CallError{Call: raw.failedCall, Msg: raw.what}
	}
	if testHookRaw != nil {
		testHookRaw(&raw)
	}
	res := interpret(p, raw, x, opt.AbsGap == 0 && opt.RelGap == 0)

	if res.Status == Infeasible && raw.numIntegers > 0 && opt.TimeLimit > 0 && elapsed >= opt.TimeLimit {
		// CBC 2.10.8 reports status 0 / secondary 1 ("proven infeasible")
		// on feasible problems when the time limit expires inside
		// CglPreProcess, without setting isSecondsLimitReached. Our wall
		// time bounds CBC's, so a solve that ended before the limit cannot
		// have hit it; one that ended after is only believed if even the
		// LP relaxation is infeasible.
		z := m.zeroObjectiveLP(opt.LogLevel)
		if z.failedCall != "" {
			return fail, &CallError{Call: z.failedCall, Msg: z.what}
		}
		if !z.provenInfeasible {
			res.Status, res.BestBound = StoppedNoIncumbent, math.Inf(-1)
			res.Raw.InfeasibleOverruled = true
		}
	}

	switch {
	case res.Status == Infeasible && raw.numIntegers == 0:
		// Clp's isProvenInfeasible also covers dual infeasibility, so a
		// pure LP flagged "infeasible" may be unbounded: with a zero
		// objective only primal infeasibility remains.
		z := m.zeroObjectiveLP(opt.LogLevel)
		if z.failedCall != "" {
			return fail, &CallError{Call: z.failedCall, Msg: z.what}
		}
		if z.provenOptimal {
			res.Status, res.Obj, res.BestBound = Unbounded, math.Inf(-1), math.Inf(-1)
		}
	case res.Status == StoppedWithIncumbent || res.Status == StoppedNoIncumbent ||
		(res.Status == Optimal && res.BestBound < res.Obj):
		// The LP relaxation is a bound CBC cannot spoil; it covers stops
		// before CBC's own bound exists and floors a weak one.
		lp := m.run(true, opt.LogLevel, nil, nil, nil, make([]float64, p.NumCols))
		if lp.failedCall != "" {
			return fail, &CallError{Call: lp.failedCall, Msg: lp.what}
		}
		if lp.provenOptimal && !lp.abandoned {
			res.Raw.LPBound = lp.objValue + p.ObjOffset
			res.BestBound = math.Max(res.BestBound, res.Raw.LPBound)
		}
		res.BestBound = math.Min(res.BestBound, res.Obj)
	}
	return res, nil
}

// noAnswer is a Result with status st and nothing known: no incumbent (Obj +Inf), no bound.
func noAnswer(st Status) Result {
	return Result{Status: st, Obj: math.Inf(1), BestBound: math.Inf(-1), Raw: Raw{LPBound: math.NaN()}}
}

// zeroObjectiveLP solves the LP relaxation with a zero objective: optimal
// means the relaxation is feasible, infeasible means primal infeasible.
func (m *cModel) zeroObjectiveLP(logLevel int) rawOutcome {
	z := *m
	z.obj = make([]float64, m.ncols)
	return z.run(true, logLevel, nil, nil, nil, make([]float64, m.ncols))
}

// testHookRaw lets tests reproduce CBC outcomes that depend on timing.
var testHookRaw func(*rawOutcome)

// trustedBoundCeiling separates real objective values from CBC's "no value"
// sentinels (COIN_DBL_MAX, 1e50, 1e100).
const trustedBoundCeiling = 1e40

// interpret maps CBC's raw outcome to a Result. The mapping, in order:
//
//	Cbc_isAbandoned or Cbc_status == 2               → Failed
//	MIP: Cbc_secondaryStatus == 7 or isContinuousUnbounded → Unbounded
//	Cbc_isProvenOptimal and an incumbent exists      → Optimal
//	Cbc_isProvenInfeasible                           → Infeasible
//	  (pure LP: re-checked with a zero objective, may become Unbounded)
//	MIP: Cbc_status 1 (limit) or 5 (SIGINT), or any
//	     is{Seconds,Node,Solution}LimitReached       → Stopped{With,No}Incumbent
//	                                                    by Cbc_bestSolution != NULL
//	anything else                                    → Failed
func interpret(p *Problem, raw rawOutcome, x []float64, zeroGap bool) Result {
	res := Result{
		Status:    Failed,
		Obj:       math.Inf(1),
		BestBound: math.Inf(-1),
		Nodes:     raw.nodes,
		Raw: Raw{
			Status: raw.status, SecondaryStatus: raw.secondary,
			ProvenOptimal: raw.provenOptimal, ProvenInfeasible: raw.provenInfeasible,
			SecondsLimitReached: raw.secondsLimit, NodeLimitReached: raw.nodeLimit,
			BestPossible: raw.bestPossible, ObjValue: raw.objValue,
			LPPath: raw.numIntegers == 0, LPBound: math.NaN(),
			SIGINTRedelivered: raw.sigintRedelivered,
		},
	}
	mip := raw.numIntegers > 0
	limited := raw.status == 1 || raw.status == 5 || raw.secondsLimit || raw.nodeLimit || raw.solutionLimit
	switch {
	case raw.abandoned || raw.status == 2:
		return res
	case mip && (raw.secondary == 7 || raw.contUnbounded):
		res.Status, res.Obj = Unbounded, math.Inf(-1)
		return res
	case raw.provenOptimal && raw.hasSolution:
		res.Status = Optimal
	case raw.provenInfeasible:
		res.Status, res.BestBound = Infeasible, math.Inf(1)
		return res
	case mip && limited:
		res.Status = StoppedNoIncumbent
		if raw.hasSolution {
			res.Status = StoppedWithIncumbent
		}
	default:
		return res
	}

	// CBC's own bound is usable only when it is a real number strictly
	// below the incumbent: Cbc_getBestPossibleObjValue returns
	// min(bestPossible, incumbent), and bestPossible keeps its initial
	// +COIN_DBL_MAX until the tree search has started, so a value equal to
	// the incumbent proves nothing.
	bound := math.Inf(-1)
	b := raw.bestPossible
	if b > -trustedBoundCeiling && b < trustedBoundCeiling && (!raw.hasSolution || b < raw.objValue-1e-9*(1+math.Abs(raw.objValue))) {
		bound = b + p.ObjOffset
	}
	if raw.hasSolution {
		roundIntegers(p, x)
		res.X = x
		res.Obj = objective(p, x)
	}
	if res.Status == Optimal {
		if zeroGap || raw.secondary != 2 {
			bound = res.Obj
		}
		// A gap stop leaves bound from CBC (or −Inf); Solve adds the LP
		// relaxation as a floor.
	}
	res.BestBound = math.Min(bound, res.Obj)
	return res
}

// intTol is how far from an integer CBC may leave an integer column
// (CBC's integerTolerance is 1e-7; the slack covers preprocessing).
const intTol = 1e-6

func roundIntegers(p *Problem, x []float64) {
	for j, isInt := range p.Integer {
		if isInt {
			if r := math.Round(x[j]); math.Abs(x[j]-r) <= intTol {
				x[j] = r
			}
		}
	}
}

func objective(p *Problem, x []float64) float64 {
	s := p.ObjOffset
	for j, c := range p.Obj {
		s += c * x[j]
	}
	return s
}
