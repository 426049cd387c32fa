package telemetry

import "encoding/json"

// SchemaVersion is the "v" every document of the decision log carries. A reader refuses any other
// version rather than guess at a schema it does not know. Version 2 added MasterRecord.CutsFrom;
// the reader still reads version 1, whose master records are all whole.
const SchemaVersion = 2

// Record types.
const (
	TypeMaster = "master" // one GBD master problem; Record.Master is set
	TypeSolve  = "solve"  // the end of one solve; Record.Solve is set
)

// Cut kinds, as the gbd package names them.
const (
	CutOptimality  = "optimality"
	CutFeasibility = "feasibility"
)

// Proposal outcomes: what happened to the agent's proposal at one master iteration.
const (
	OutcomeInfeasible = "infeasible" // the proposal was not in Y_pb or failed the master's cuts
	OutcomeAccepted   = "accepted"   // the proposal became the next iterate, evaluated next
	OutcomeReplaced   = "replaced"   // the master solver's iterate was used instead
	OutcomeRepeat     = "repeat"     // the proposal won but had been evaluated already: the master's point was used
	OutcomeFinal      = "final"      // the proposal passed the screen at the master step that ended the solve
	OutcomeUndecided  = "undecided"  // an independent-IL probability fell between the thresholds
	OutcomeError      = "error"      // the policy returned an error
)

// Problems a record's solve can be of (Record.Problem).
const (
	ProblemHard = ""     // the measurement's own problem, with its hard limits
	ProblemSoft = "soft" // its soft-constrained version, solved when the hard limits cannot be held
)

// Record is one line of the decision log. Exactly one of Master and Solve is set, according to Type.
type Record struct {
	V             int    `json:"v"`
	Type          string `json:"type"`
	TSms          int64  `json:"ts_ms"` // Unix milliseconds
	Plant         string `json:"plant"`
	Family        string `json:"family"`
	SolveID       string `json:"solve_id"` // groups the master records of one solve
	Step          uint64 `json:"step,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`
	// Problem is ProblemSoft for the masters and the solve of a soft-constrained problem: the
	// instance alone rebuilds the hard problem, so replay must not take their cuts for its.
	Problem string        `json:"problem,omitempty"`
	Master  *MasterRecord `json:"master,omitempty"`
	Solve   *SolveRecord  `json:"solve,omitempty"`
}

// CutRecord is one Benders cut φ(y) = Coef·y + Const (its affine part: a stage cut's tables are
// not logged), plus the problem's hinges when Hinges says so (gbd.Hinges: exact costs of the
// binaries, such as starts, a function of the problem that replay rebuilds from the instance).
type CutRecord struct {
	Kind    string    `json:"kind"` // CutOptimality or CutFeasibility
	Coef    []float64 `json:"coef"` // len NY
	Const   float64   `json:"const"`
	Iter    int       `json:"iter"` // GBD iteration that produced the cut, -1 when carried
	Carried bool      `json:"carried,omitempty"`
	Hinges  bool      `json:"hinges,omitempty"`
}

// ProposalRecord is what the agent proposed at one master iteration and what became of it.
type ProposalRecord struct {
	Index   int       `json:"index"` // into Y_pb, -1 for none
	Y       []float64 `json:"y"`
	Probs   []Num     `json:"probs,omitempty"`  // independent-IL agent: one probability per binary
	Logits  []Num     `json:"logits,omitempty"` // feasibility-aware agent: one logit per Y_pb entry
	Outcome string    `json:"outcome"`
}

// MasterRecord is one master problem: everything needed to rebuild it offline and the decisions
// taken on it.
type MasterRecord struct {
	Iter         int         `json:"iter"`
	NY           int         `json:"ny"`
	YpbSignature string      `json:"ypb_signature"`
	YpbCount     int         `json:"ypb_count"`
	Cuts         []CutRecord `json:"cuts"` // every cut of the master problem at this iteration
	// CutsFrom, on a line of the log, says that the master's first CutsFrom cuts are those of the
	// previous master record of the same solve and problem in the segment, and Cuts holds the rest
	// (chain.go). A record a Reader returns is whole, with CutsFrom 0.
	CutsFrom int       `json:"cuts_from,omitempty"`
	Prev     []float64 `json:"prev"` // previous iterate y^k
	// Instance is the plant family's instance (its parameters), enough to rebuild the MINLP.
	Instance      json.RawMessage `json:"instance,omitempty"`
	Proposal      *ProposalRecord `json:"proposal,omitempty"` // nil when no agent ran
	TkSeconds     Num             `json:"tk_seconds"`
	LBD           Num             `json:"lbd"`
	UBD           Num             `json:"ubd"`
	MasterSeconds float64         `json:"master_seconds"`
	MasterStatus  string          `json:"master_status"`
	MasterY       []float64       `json:"master_y"`
	MasterMu      Num             `json:"master_mu"`
	MasterBound   Num             `json:"master_bound"`
	Chosen        []float64       `json:"chosen"` // the iterate y^{k+1} actually used
}

// AgentStats counts what the agent did over one solve.
type AgentStats struct {
	Proposed       int `json:"proposed"`
	Feasible       int `json:"feasible"`
	Accepted       int `json:"accepted"`
	SolverSelected int `json:"solver_selected"`
	Repeated       int `json:"repeated,omitempty"`
	Final          int `json:"final,omitempty"`
	Benched        int `json:"benched,omitempty"`
}

// SolveRecord is the outcome of one solve.
type SolveRecord struct {
	Status            string          `json:"status"`
	Y                 []float64       `json:"y"`
	Objective         Num             `json:"objective"`
	LBD               Num             `json:"lbd"`
	UBD               Num             `json:"ubd"`
	Iterations        int             `json:"iterations"`
	MasterSeconds     float64         `json:"master_seconds"`
	SubproblemSeconds float64         `json:"subproblem_seconds"`
	TotalSeconds      float64         `json:"total_seconds"`
	Agent             *AgentStats     `json:"agent,omitempty"`
	Instance          json.RawMessage `json:"instance,omitempty"`
	Message           string          `json:"message,omitempty"`
	// Relaxed is set on the solve of a soft problem whose plan breaks the hard limits: the action's
	// "relaxed" object.
	Relaxed *RelaxedRecord `json:"relaxed,omitempty"`
}

// RelaxedRecord is how a relaxed plan breaks the plant's hard limits (the fields of the action's
// "relaxed" object that replay and audits read).
type RelaxedRecord struct {
	Limit        string  `json:"limit"`
	Bound        float64 `json:"bound"`
	MaxViolation float64 `json:"max_violation"`
	FirstStep    int     `json:"first_step"`
	WorstStep    int     `json:"worst_step"`
	Unserved     float64 `json:"unserved"`
	Proof        string  `json:"proof"`
}
