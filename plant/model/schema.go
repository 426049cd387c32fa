package model

// Model is a plant family written as data (doc.go, "Model files"). Every element keeps the line it
// was written on, so that a check made after parsing can still name it.
type Model struct {
	Name      string
	Dt        float64 // length of one step, in the model's time unit (run costs are per that unit)
	Horizon   int     // N steps
	Blocks    int     // B move blocks of the units' binaries; N must be a multiple (default N)
	States    []State
	Inputs    []Input
	Units     []Unit
	Forecasts []Forecast
	Costs     []Cost
	Rules     []Rule
	// Constraints are linear rows among the inputs and forecasts of each step (a power balance).
	Constraints []Constraint
	// SafeHold, when set, makes the safe action depend on the measurement (safe.go).
	SafeHold *SafeHold
	// MaxEnumerate caps the Y_pb that is enumerated (0: gbd.DefaultMaxAdmissible); beyond it Y_pb
	// stays implicit (its rows), for the cbc or staged master.
	MaxEnumerate int

	file  string
	line  int
	names map[string]ref // every state, input, unit and forecast by name (check)
}

// State is a continuous state with linear dynamics:
//
//	x[t+1] = Σ_s' Next[s']·x_s'[t] + Σ_i Next[i]·u_i[t] + Σ_f Next[f]·d_f[t] + Const.
type State struct {
	Name string
	// Lo, Hi is the physical range: the box of every planned value and the range a measured value
	// must lie in.
	Lo, Hi float64
	// Min, Max are hard limits for t = 1..N (HasMin, HasMax say whether they are set).
	Min, Max       float64
	HasMin, HasMax bool
	// SoftMin, SoftMax are limits priced by SoftPenalty per unit of violation and step.
	SoftMin, SoftMax       float64
	HasSoftMin, HasSoftMax bool
	SoftPenalty            float64
	Next                   []Coef
	Const                  float64
	line                   int
}

// Coef is one coefficient of a linear combination, by the name of a state, input or forecast.
type Coef struct {
	Name  string
	Value float64
	line  int
}

// Input is a continuous input, constant over one step. A gated input (Unit set) is zero while its
// unit is off and lies in [OnMin, Hi] while it is on.
type Input struct {
	Name   string
	Lo, Hi float64
	Unit   string
	OnMin  float64
	Safe   float64 // value in the safe action (with its unit off when gated: 0)
	line   int
	unitAt int // line of "unit"
}

// Unit is an on/off decision, held over each move block: y[unit, b].
type Unit struct {
	Name      string
	RunCost   float64 // per time unit while on: RunCost·Dt per step
	StartCost float64 // per start (off in the previous block, or measured off, and on now)
	MinUp     int     // blocks a unit switched on inside the horizon stays on (1: no rule)
	MinDown   int     // blocks a unit switched off inside the horizon stays off (1: no rule)
	MustRun   bool
	SafeOn    bool
	line      int
}

// Forecast is a series of N values carried by every measurement, each within [Lo, Hi].
type Forecast struct {
	Name   string
	Lo, Hi float64
	// TypLo, TypHi is the range Sample draws from (default [Lo, Hi]): the values a plant usually
	// sees, as opposed to the widest it may report.
	TypLo, TypHi float64
	line         int
}

// Atom names of cost terms.
const (
	AtomLinear    = "linear"
	AtomQuadratic = "quadratic"
	AtomAbs       = "abs"
	AtomPower     = "power"
	AtomPWL       = "pwl"
)

// Cost is the separable term Σ_t Weight·f[t]·φ(Scale·(v[t] − Ref)) over the steps of variable Var
// (a state or an input), f the forecast Times (1 when empty) and φ the atom.
type Cost struct {
	Var    string
	Atom   string
	Weight float64
	Scale  float64 // default 1
	Ref    float64
	P      float64      // exponent of power
	Points [][2]float64 // pwl: breakpoints (argument, value), arguments increasing
	Times  string
	// Terminal restricts a state's term to t = N.
	Terminal bool
	line     int
}

// Constraint is Σ Sum[k]·(input or forecast)[t] (= | ≤ | ≥) RHS at every step t = 0..N−1.
type Constraint struct {
	Name string
	Sum  []Coef
	Op   string // "eq", "le" or "ge"
	RHS  float64
	line int
}

// Rule kinds.
const (
	RuleAtMost    = "at_most"
	RuleExclusive = "exclusive"
)

// Rule is a pure binary rule over units, the same in every block.
type Rule struct {
	Kind  string
	K     int
	Units []string
	line  int
}

// SafeHold is the rule of a measurement-dependent safe action: bring State to Ref by the end of
// the step, with the units that gate inputs entering its dynamics (safe.go).
type SafeHold struct {
	State string
	Ref   float64
	line  int
}
