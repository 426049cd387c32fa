package pumpstation

import (
	"encoding/json"
	"fmt"
	"math"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// Family is the pump station as an mpc.Family.
type Family struct {
	cfg  Config
	ypb  *gbd.Admissible
	rows *mpc.RowTimes
}

var _ mpc.Family = (*Family)(nil)

// NewFamily validates cfg and enumerates its Y_pb once (or keeps it implicit beyond MaxEnumerate).
func NewFamily(cfg Config) (*Family, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Pumps = append([]Pump(nil), cfg.Pumps...)
	cfg.SafeOn = append([]int(nil), cfg.SafeOn...)
	cfg.SafeFlow = append([]float64(nil), cfg.SafeFlow...)
	if len(cfg.SafeOn) == 0 {
		cfg.SafeOn, cfg.SafeFlow = make([]int, cfg.NP()), make([]float64, cfg.NP())
	}
	ypb, err := Admissible(&cfg)
	if err != nil {
		return nil, fmt.Errorf("pumpstation: %w", err)
	}
	return &Family{cfg: cfg, ypb: ypb, rows: cfg.RowTimes()}, nil
}

// Name implements mpc.Family.
func (f *Family) Name() string { return Name }

// Config returns a copy of the family's configuration.
func (f *Family) Config() Config { return f.cfg }

// Admissible implements mpc.Family.
func (f *Family) Admissible() *gbd.Admissible { return f.ypb }

// DecodeMeasurement implements mpc.Family.
func (f *Family) DecodeMeasurement(payload []byte) (mpc.Measurement, error) {
	in, err := Decode(payload, &f.cfg)
	if err != nil {
		return nil, err
	}
	return &Measurement{Inst: in, fam: f}, nil
}

// Measure wraps an instance built in Go (the simulator, tests) after validating it.
func (f *Family) Measure(in Instance) (*Measurement, error) {
	if err := in.Validate(&f.cfg); err != nil {
		return nil, err
	}
	return &Measurement{Inst: in, fam: f}, nil
}

// SafeAction implements mpc.Family: the fixed safe action (SafeOn, SafeFlow).
func (f *Family) SafeAction() mpc.Action {
	return marshalApply(f.cfg.SafeOn, f.cfg.SafeFlow)
}

var _ mpc.SafeActioner = (*Family)(nil)

// SafeActionFor implements mpc.SafeActioner. With SafeHold it computes the level-holding action
// for m: the inflow q* = d₀ + A·(h_ref − h)/Δt that brings the level to level_ref at the end of the
// step, clamped to what the station can pump, served by the set of at most max_on pumps whose
// range [Σq_min, Σq_max] comes closest to q* (fewest pumps on a tie, then the lowest-numbered),
// each running pump at q_min plus a share of the rest in proportion to its q_max − q_min: the rule
// of mpc.HoldSet, which a model's safe_hold uses as well. Without SafeHold, or for a measurement of
// another family, it is SafeAction.
func (f *Family) SafeActionFor(m mpc.Measurement) mpc.Action {
	pm, ok := m.(*Measurement)
	if !f.cfg.SafeHold || !ok {
		return f.SafeAction()
	}
	on, q, ok := f.holdLevel(&pm.Inst)
	if !ok {
		return f.SafeAction() // more pumps than the rule chooses among (mpc.MaxHoldUnits)
	}
	return marshalApply(on, q)
}

func (f *Family) holdLevel(in *Instance) (on []int, q []float64, ok bool) {
	c := &f.cfg
	np := c.NP()
	want := in.Demand[0] + c.Area*(c.LevelRef-in.Level)/c.Dt
	units := make([]mpc.HoldUnit, np)
	for p, pump := range c.Pumps {
		units[p] = mpc.HoldUnit{Lo: pump.QMin, Hi: pump.QMax}
	}
	run, alpha, ok := mpc.HoldSet(want, units, func(run []bool) bool {
		n := 0
		for _, r := range run {
			if r {
				n++
			}
		}
		return n <= c.MaxOn
	})
	if !ok {
		return nil, nil, false
	}
	on, q = make([]int, np), make([]float64, np)
	for p, r := range run {
		if r {
			on[p] = 1
			q[p] = c.Pumps[p].QMin + alpha*(c.Pumps[p].QMax-c.Pumps[p].QMin)
		}
	}
	return on, q, true
}

// PlanFrom implements mpc.Family, for solves of the hard and of the soft problem.
func (f *Family) PlanFrom(m mpc.Measurement, r *gbd.Result) (mpc.Plan, error) {
	pm, ok := m.(*Measurement)
	if !ok || pm.fam != f {
		return nil, fmt.Errorf("pumpstation: measurement %T is not of this family", m)
	}
	if r == nil || r.Y == nil || r.X == nil {
		return nil, fmt.Errorf("pumpstation: result has no incumbent")
	}
	return newPlan(f, &pm.Inst, r.Y, r.X)
}

// Measurement is a validated instance of a Family.
type Measurement struct {
	Inst Instance
	fam  *Family
}

var (
	_ mpc.Measurement = (*Measurement)(nil)
	_ mpc.Starter     = (*Measurement)(nil)
	_ mpc.Softener    = (*Measurement)(nil)
)

// Problem implements mpc.Measurement.
func (m *Measurement) Problem() (*gbd.Problem, error) { return Problem(&m.fam.cfg, &m.Inst), nil }

// Unholdable implements mpc.Softener with the reachability pre-check (Reach).
func (m *Measurement) Unholdable() string {
	c := &m.fam.cfg
	limit, step, ok := Reach(c, &m.Inst)
	if ok {
		return ""
	}
	if limit == "level_min_m" {
		return fmt.Sprintf("even the %d largest pumps at full flow cannot keep the level at or above %g m by the end of step %d",
			min(c.MaxOn, c.NP()), c.LevelMin, step)
	}
	return fmt.Sprintf("even with every pump off the level exceeds %g m by the end of step %d", c.LevelMax, step)
}

// SoftProblem implements mpc.Softener (SoftProblem, SoftPenalties).
func (m *Measurement) SoftProblem() (*gbd.Problem, float64, error) {
	p, pen := SoftProblem(&m.fam.cfg, &m.Inst)
	return p, pen.Bound, nil
}

// SoftStart implements mpc.Softener: the hard layout's values in place, every violation and
// unserved demand 0.
func (m *Measurement) SoftStart(x []float64) []float64 {
	c := &m.fam.cfg
	if len(x) != c.NX() {
		return nil
	}
	out := make([]float64, c.SoftNX())
	copy(out, x)
	return out
}

// Relaxation implements mpc.Softener: the level limits' violations read off the planned levels and
// the unserved demand, with levelTol and unservedTol as the solver's tolerance.
func (m *Measurement) Relaxation(x []float64) (mpc.Relaxation, bool) {
	c := &m.fam.cfg
	if len(x) != c.SoftNX() && len(x) != c.NX() {
		return mpc.Relaxation{}, false
	}
	return relaxation(c, &m.Inst, x)
}

// Instance implements mpc.Measurement.
func (m *Measurement) Instance() json.RawMessage { return MarshalInstance(m.Inst) }

// Start implements mpc.Starter: without a previous plan, keep the measured pump states over the
// whole horizon (admissible unless more than MaxOn pumps are running).
func (m *Measurement) Start() (y, x []float64) {
	y = m.fam.rows.Hold(m.Inst.PumpsOn)
	if !m.fam.ypb.Contains(y) {
		return nil, nil
	}
	return y, nil
}

// Alternates implements mpc.Alternator: y with every block of one running pump handed to another
// pump that is off in those blocks, for each such pair — the plan that runs the same hours on
// another pump, which GBD's master, its cuts made around the previous plan, is slow to try when
// prices or demand make another pump the cheaper one. At most P·(P−1) assignments.
func (m *Measurement) Alternates(y []float64) [][]float64 {
	c := &m.fam.cfg
	if len(y) != c.NY() {
		return nil
	}
	return mpc.Blocking{Steps: c.Horizon, Blocks: c.Blocks}.HandOvers(y, nil)
}

// Plan is a solved or shifted horizon plan. Steps are 0-based: step t runs the pumps On[p][t] at
// Flow[p][t] and ends at Level[t] (the solve's h[t+1]).
type Plan struct {
	fam      *Family
	Level0   float64     // measured level the plan started from
	Level    []float64   // planned level at the end of each step, m
	Flow     [][]float64 // [pump][step] commanded flow, m³/h
	On       [][]int     // [pump][step] pump state
	Demand   []float64   // forecast the plan was made for, m³/h
	Price    []float64   // €/kWh
	Unserved []float64   // demand the tank cannot serve (a soft solve; nil otherwise), m³/h
	Y        []float64   // the solve's block binaries, pump-major
	Shifted  int         // steps dropped since the solve
}

var _ mpc.Plan = (*Plan)(nil)

func newPlan(f *Family, in *Instance, y, x []float64) (*Plan, error) {
	c := &f.cfg
	if len(y) != c.NY() || len(x) != c.NX() && len(x) != c.SoftNX() {
		return nil, fmt.Errorf("pumpstation: result has %d binaries and %d continuous values, want %d and %d (or %d, soft)",
			len(y), len(x), c.NY(), c.NX(), c.SoftNX())
	}
	pl := &Plan{fam: f, Level0: in.Level, Y: append([]float64(nil), y...),
		Demand: append([]float64(nil), in.Demand...), Price: append([]float64(nil), in.Price...)}
	pl.Level = make([]float64, c.Horizon)
	for t := range c.Horizon {
		// The NLP meets its box only to solver tolerance; the plan stays inside the tank.
		pl.Level[t] = math.Min(math.Max(x[c.HIndex(t+1)], c.PhysMin), c.PhysMax)
	}
	if len(x) == c.SoftNX() {
		pen := SoftPenalties(c, in)
		pl.Unserved = make([]float64, c.Horizon)
		any := false
		for t := range c.Horizon {
			u := math.Min(math.Max(x[c.UIndex(t)]/pen.unservedScale(c, t), 0), in.Demand[t])
			if u*c.Dt/c.Area <= unservedTol {
				u = 0 // solver tolerance, not demand left unserved
			}
			pl.Unserved[t] = u
			any = any || u > 0
		}
		if !any {
			pl.Unserved = nil
		}
	}
	pl.Flow = make([][]float64, c.NP())
	pl.On = make([][]int, c.NP())
	for p, pump := range c.Pumps {
		pl.Flow[p] = make([]float64, c.Horizon)
		pl.On[p] = make([]int, c.Horizon)
		for t := range c.Horizon {
			if y[c.YIndex(p, c.BlockOf(t))] < 0.5 {
				continue
			}
			pl.On[p][t] = 1
			// The NLP meets its bounds only to solver tolerance (an interior-point solver ends just
			// inside them, Ipopt's relaxed bounds just outside): the plant gets a flow it can run,
			// and a flow at a limit reads as the limit.
			q := x[c.QIndex(p, t)]
			switch {
			case q <= pump.QMin+flowSnap:
				q = pump.QMin
			case q >= pump.QMax-flowSnap:
				q = pump.QMax
			}
			pl.Flow[p][t] = q
		}
	}
	return pl, nil
}

// flowSnap: a planned flow this close to a pump's limit (m³/h) is published as the limit.
const flowSnap = 1e-6

func (pl *Plan) blocking() mpc.Blocking {
	return mpc.Blocking{Steps: pl.fam.cfg.Horizon, Blocks: pl.fam.cfg.Blocks}
}

// Pattern is the block pattern to restart from: the solve's binaries seen Shifted steps later
// (mpc.Blocking.ShiftPattern).
func (pl *Plan) Pattern() []float64 { return pl.blocking().ShiftPattern(pl.Y, pl.Shifted) }

// Apply implements mpc.Plan: step 0's pump states and flows.
func (pl *Plan) Apply() mpc.Action {
	n := len(pl.On)
	on, q := make([]int, n), make([]float64, n)
	for p := range n {
		on[p], q[p] = pl.On[p][0], pl.Flow[p][0]
	}
	return marshalApply(on, q)
}

// Shift implements mpc.Plan. It fails once every step of the solved plan has been applied.
func (pl *Plan) Shift() (mpc.Plan, bool) {
	if pl.Shifted+1 >= pl.fam.cfg.Horizon {
		return nil, false
	}
	n := &Plan{fam: pl.fam, Level0: pl.Level[0], Y: pl.Y, Shifted: pl.Shifted + 1,
		Level:  mpc.ShiftSteps(pl.Level, 1),
		Demand: mpc.ShiftSteps(pl.Demand, 1),
		Price:  mpc.ShiftSteps(pl.Price, 1),
		Flow:   make([][]float64, len(pl.Flow)),
		On:     make([][]int, len(pl.On)),
	}
	if pl.Unserved != nil {
		n.Unserved = mpc.ShiftSteps(pl.Unserved, 1)
	}
	for p := range pl.Flow {
		n.Flow[p], n.On[p] = mpc.ShiftSteps(pl.Flow[p], 1), mpc.ShiftSteps(pl.On[p], 1)
	}
	return n, true
}

// Start implements mpc.Plan: the block pattern (when admissible) and the trajectory as x, with
// start indicators implied by the pattern.
func (pl *Plan) Start() (y, x []float64) {
	c := &pl.fam.cfg
	y = pl.Pattern()
	if !pl.fam.ypb.Contains(y) {
		y = nil
	}
	x = make([]float64, c.NX())
	for p := range c.Pumps {
		for t := range c.Horizon {
			x[c.QIndex(p, t)] = pl.Flow[p][t]
		}
	}
	for t := range c.Horizon {
		x[c.HIndex(t+1)] = pl.Level[t]
	}
	if y != nil {
		for p := range c.Pumps {
			for b := 1; b < c.Blocks; b++ {
				x[c.SIndex(p, b)] = math.Max(0, y[c.YIndex(p, b)]-y[c.YIndex(p, b-1)])
			}
		}
	}
	return y, x
}

// planJSON is the action's "plan" object.
type planJSON struct {
	DtH      float64    `json:"dt_h"`
	Shifted  int        `json:"shifted"`
	Level0   float64    `json:"level0_m"`
	Steps    []stepJSON `json:"steps"`
	Blocks   int        `json:"blocks"`
	Y        []float64  `json:"y"`
	YShifted []float64  `json:"y_shifted,omitempty"`
}

type stepJSON struct {
	T       int       `json:"t"`
	Level   float64   `json:"level_m"` // at the end of the step
	PumpsOn []int     `json:"pumps_on"`
	Flow    []float64 `json:"flow_m3h"`
	Demand  float64   `json:"demand_m3h"`
	Price   float64   `json:"price_eur_kwh"`
	// Unserved is the part of the demand the empty tank cannot serve (a relaxed plan only).
	Unserved float64 `json:"unserved_m3h,omitempty"`
}

// JSON implements mpc.Plan: per step the planned level at its end, pump states and flows, with the
// forecast (and, in a relaxed plan, the demand left unserved); then the block binaries (pump-major; "y_shifted" is the pattern to restart from after a
// shift).
func (pl *Plan) JSON() json.RawMessage {
	c := &pl.fam.cfg
	out := planJSON{DtH: c.Dt, Shifted: pl.Shifted, Level0: pl.Level0, Blocks: c.Blocks, Y: pl.Y}
	if pl.Shifted > 0 {
		out.YShifted = pl.Pattern()
	}
	for t := range c.Horizon {
		s := stepJSON{T: t, Level: pl.Level[t], Demand: pl.Demand[t], Price: pl.Price[t],
			PumpsOn: make([]int, c.NP()), Flow: make([]float64, c.NP())}
		for p := range c.Pumps {
			s.PumpsOn[p], s.Flow[p] = pl.On[p][t], pl.Flow[p][t]
		}
		if pl.Unserved != nil {
			s.Unserved = pl.Unserved[t]
		}
		out.Steps = append(out.Steps, s)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

var _ mpc.PlanDecoder = (*Family)(nil)

// DecodePlan implements mpc.PlanDecoder: it reads back what Plan.JSON wrote for this family's
// configuration and checks it as strictly as the plant would (sizes, step numbers, pump states 0
// or 1, flows of running pumps within their limits and zero otherwise, finite levels and
// forecasts, admissible block binaries).
func (f *Family) DecodePlan(raw json.RawMessage) (mpc.Plan, error) {
	c := &f.cfg
	var pj planJSON
	if err := json.Unmarshal(raw, &pj); err != nil {
		return nil, fmt.Errorf("pumpstation: plan: %w", err)
	}
	if pj.Steps == nil {
		return nil, fmt.Errorf("pumpstation: plan: no steps (a null plan: the safe action was applied)")
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case len(pj.Steps) != c.Horizon:
		return nil, fmt.Errorf("pumpstation: plan: %d steps, want the horizon %d", len(pj.Steps), c.Horizon)
	case !finite(pj.Level0):
		return nil, fmt.Errorf("pumpstation: plan: level0_m is not finite")
	}
	head := mpc.PlanHead{Dt: pj.DtH, Blocks: pj.Blocks, Shifted: pj.Shifted, Y: pj.Y}
	if err := head.Check("dt_h", c.Dt, f.rows.Blocking, f.ypb); err != nil {
		return nil, fmt.Errorf("pumpstation: plan: %w", err)
	}
	pl := &Plan{fam: f, Level0: pj.Level0, Y: pj.Y, Shifted: pj.Shifted,
		Level: make([]float64, c.Horizon), Demand: make([]float64, c.Horizon), Price: make([]float64, c.Horizon),
		Flow: make([][]float64, c.NP()), On: make([][]int, c.NP())}
	for p := range c.Pumps {
		pl.Flow[p], pl.On[p] = make([]float64, c.Horizon), make([]int, c.Horizon)
	}
	for t, s := range pj.Steps {
		switch {
		case s.T != t:
			return nil, fmt.Errorf("pumpstation: plan: steps[%d] has t = %d", t, s.T)
		case len(s.PumpsOn) != c.NP() || len(s.Flow) != c.NP():
			return nil, fmt.Errorf("pumpstation: plan: steps[%d]: %d pump states and %d flows, want %d", t, len(s.PumpsOn), len(s.Flow), c.NP())
		case !finite(s.Level) || !finite(s.Demand) || !finite(s.Price) || !finite(s.Unserved):
			return nil, fmt.Errorf("pumpstation: plan: steps[%d]: level, demand, price and unserved demand must be finite", t)
		case s.Unserved < 0 || s.Unserved > s.Demand:
			return nil, fmt.Errorf("pumpstation: plan: steps[%d]: unserved demand %v outside [0, %v]", t, s.Unserved, s.Demand)
		}
		pl.Level[t], pl.Demand[t], pl.Price[t] = s.Level, s.Demand, s.Price
		if s.Unserved > 0 {
			if pl.Unserved == nil {
				pl.Unserved = make([]float64, c.Horizon)
			}
			pl.Unserved[t] = s.Unserved
		}
		for p := range c.Pumps {
			if err := c.checkMove(p, s.PumpsOn[p], s.Flow[p]); err != nil {
				return nil, fmt.Errorf("pumpstation: plan: steps[%d]: pump %d %w", t, p, err)
			}
			pl.On[p][t], pl.Flow[p][t] = s.PumpsOn[p], s.Flow[p]
		}
	}
	return pl, nil
}

// ApplyJSON is the "apply" object: {"pumps_on":[…],"flow_m3h":[…]}.
type ApplyJSON struct {
	PumpsOn []int     `json:"pumps_on"`
	Flow    []float64 `json:"flow_m3h"`
}

func marshalApply(on []int, q []float64) mpc.Action {
	b, err := json.Marshal(ApplyJSON{PumpsOn: on, Flow: q})
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// DecodeApply parses an action's "apply" object (the simulator's side of the wire).
func DecodeApply(a mpc.Action, c *Config) (ApplyJSON, error) {
	var out ApplyJSON
	if err := json.Unmarshal(a, &out); err != nil {
		return ApplyJSON{}, fmt.Errorf("pumpstation: apply: %w", err)
	}
	if len(out.PumpsOn) != c.NP() || len(out.Flow) != c.NP() {
		return ApplyJSON{}, fmt.Errorf("pumpstation: apply has %d states and %d flows, want %d", len(out.PumpsOn), len(out.Flow), c.NP())
	}
	return out, nil
}
