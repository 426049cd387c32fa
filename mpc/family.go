package mpc

import (
	"encoding/json"
	"time"

	"gbdmpc/gbd"
)

// Family is a plant family as the receding-horizon controller sees it. A new plant is a new
// implementation of this interface in plant/, never a change to mpc/.
type Family interface {
	// Name is the family name used in configs, policy files and decision logs ("pumpstation").
	Name() string
	// Admissible is the family's fixed Y_pb (its pure binary constraints depend on no measurement).
	Admissible() *gbd.Admissible
	// DecodeMeasurement parses and validates the family's instance fields of a measurement payload
	// (a JSON object that also carries v, seq and ts_ms). Every rejection is a clear error.
	DecodeMeasurement(payload []byte) (Measurement, error)
	// SafeAction is the configured action applied when no plan is left (e.g. all pumps off).
	SafeAction() Action
	// PlanFrom turns a solve of m's problem that has an incumbent (r.Y and r.X set) into the plan
	// to publish. It fails when m is not of this family or r does not fit m's problem.
	PlanFrom(m Measurement, r *gbd.Result) (Plan, error)
}

// Measurement is one validated plant measurement with its forecasts.
type Measurement interface {
	// Problem transcribes the receding-horizon MINLP for this measurement.
	Problem() (*gbd.Problem, error)
	// Instance is the canonical JSON of the instance (what `gbdmpc solve` reads), for decision logs.
	Instance() json.RawMessage
}

// Starter is implemented by measurements that can guess a first iterate on their own (e.g. keep
// the measured pump states). The controller uses it when it has no previous plan to shift.
type Starter interface {
	// Start returns binaries (admissible or nil) and x (len NX or nil).
	Start() (y, x []float64)
}

// Alternator is implemented by measurements that know assignments near a warm start worth
// evaluating before GBD's first master (gbd.Settings.Starts): for a pump station, the plan with one
// pump's running blocks handed to another pump. Each costs one subproblem; one that is better than
// the warm start gives the solve its incumbent early, which is what lets the master stop searching
// (gbd.Cutoff). The controller asks for them only with Options.Alternates.
type Alternator interface {
	// Alternates returns assignments near y (admissible or not: the engine skips the others).
	Alternates(y []float64) [][]float64
}

// DualShifter is implemented by families that know which constraint row describes which plant
// time, so that the multipliers of a cut made k control steps ago can be moved to the rows that
// now describe the same time (doc.go, "Carried cuts"). Without it the controller carries
// multipliers as stored: still valid cuts, usually weaker ones.
type DualShifter interface {
	// ShiftDuals returns the alignments of d with the problem k ≥ 0 steps later to carry, each a
	// complete set of multipliers for the family's rows with every μ ≥ 0 (each becomes one carried
	// cut), or nil when d does not fit the family's rows. An alignment may share d's slices: the
	// caller only reads them, and only during the Carry that asked.
	ShiftDuals(d gbd.CutDuals, k int) []gbd.CutDuals
}

// SafeActioner is implemented by families whose safe action depends on the measurement (the pump
// station's level-holding rule). The controller applies SafeActionFor(m) instead of SafeAction()
// when no plan is left.
type SafeActioner interface {
	SafeActionFor(m Measurement) Action
}

// PlanDecoder is implemented by families whose published plans (the action's "plan" object) can be
// read back. A standby daemon taking over a plant continues from the plan the active one published
// last, so the first period after a take-over can still fall back on a shifted plan.
type PlanDecoder interface {
	// DecodePlan parses and validates a plan that Plan.JSON of this family produced. Every
	// rejection is a clear error; nothing is adopted from a plan that does not fit the family.
	DecodePlan(raw json.RawMessage) (Plan, error)
}

// Plan is a solved (or shifted) horizon plan of one family.
type Plan interface {
	// Apply is the first move to send to the plant (the action's "apply" object).
	Apply() Action
	// JSON is the whole planned trajectory (the action's "plan" object).
	JSON() json.RawMessage
	// Shift drops the first move and repeats the last, giving the fallback for the next period, and
	// ok=false when nothing is left to shift.
	Shift() (next Plan, ok bool)
	// Start is the shifted plan's guess for the next solve: binaries (admissible or nil) and x (or nil).
	Start() (y, x []float64)
}

// Action is the "apply" object of an action payload.
type Action = json.RawMessage

// Decision statuses.
const (
	StatusOptimal  = "optimal"  // certified: UBD − LBD ≤ ε
	StatusGap      = "gap"      // deadline with an incumbent; certified gap UBD − LBD
	StatusFallback = "fallback" // no new solution: shifted previous plan or the safe action
)

// Decision is what one control step produced.
type Decision struct {
	Status       string          // "optimal" | "gap" | "fallback"; a relaxed decision is optimal or gap
	Apply        Action          // first move
	Plan         json.RawMessage // whole horizon (null when the safe action is applied)
	Y            []float64
	Objective    float64
	LBD, UBD     float64
	Iterations   int
	SolveSeconds float64
	Agent        gbd.AgentStats
	Reason       string      // why a fallback was used
	Result       *gbd.Result // the raw solve (nil for a fallback without solve)
	Deadline     time.Time
	// Safe is set when the family's safe action was applied (a fallback with no plan left).
	Safe bool
	// Fallbacks counts consecutive fallback periods including this one (0 after a solve).
	Fallbacks int
	// Carry says how many cuts of earlier steps the solve started with and why others were not
	// carried (zero with Options.NoCarry); both solves of a step are added up.
	Carry gbd.CarryStats
	// Relaxed is set when the plant's hard limits cannot be held over the horizon: the decision is
	// the soft problem's optimum (Kind Soft) and the field says how it breaks the limits.
	Relaxed *Relaxation
	// Kind is the problem whose solve gave Plan (Hard, or Soft after the hard problem was proven
	// infeasible or found nothing in its time).
	Kind ProblemKind
	// Hard and Soft are the step's two solves, nil when not run (Hard is nil after a conclusive
	// pre-check, Soft unless the hard limits were in doubt). Result is one of them.
	Hard, Soft *gbd.Result
}

// KindRecorder is implemented by recorders (Options.Recorder) that want to know which problem the
// masters they are about to receive belong to: the controller calls SolvingKind before each solve.
// Decision logs tag the soft problem's masters so that replay can tell them apart.
type KindRecorder interface {
	gbd.Recorder
	SolvingKind(kind ProblemKind)
}
