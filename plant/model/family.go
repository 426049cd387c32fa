package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// Name is the family name configs use for a plant whose model is read from a file.
const Name = "model"

// Family is a model as an mpc.Family.
type Family struct {
	m    *Model
	l    *layout
	ypb  *gbd.Admissible
	safe mpc.Action // a configured safe action; nil: the model's
	hold *holdRule  // the model's safe_hold; nil: its safe action is fixed
}

var (
	_ mpc.Family      = (*Family)(nil)
	_ mpc.DualShifter = (*Family)(nil)
)

// NewFamily builds the family of a checked model: its layout and its Y_pb, enumerated up to
// MaxEnumerate assignments and implicit beyond.
func NewFamily(m *Model) (*Family, error) {
	l := newLayout(m)
	var ypb *gbd.Admissible
	var err error
	if l.ny > maxEnumerateBinaries {
		// Enumeration walks |Y_pb|·NY·rows before giving up (seconds at a few hundred binaries) to
		// find what the size already says: such a Y_pb is for the staged or cbc master.
		ypb, err = gbd.ImplicitAdmissible(l.ny, l.pure)
	} else {
		ypb, err = gbd.AdmissibleOrImplicit(l.ny, l.pure, m.MaxEnumerate)
	}
	if err != nil {
		return nil, &Error{File: m.file, Line: m.line, Msg: fmt.Sprintf("model %s: its rules: %v", m.Name, err)}
	}
	if ypb.Empty() {
		return nil, &Error{File: m.file, Line: m.line, Msg: fmt.Sprintf("model %s: its rules leave no admissible on/off plan", m.Name)}
	}
	if l.stageable {
		st := make([][]int, l.nb)
		for b := range l.nb {
			for u := range m.Units {
				st[b] = append(st[b], l.yIndex(u, b))
			}
		}
		ypb.Stages = st
	}
	f := &Family{m: m, l: l, ypb: ypb}
	if f.hold, err = f.newHoldRule(); err != nil {
		return nil, err
	}
	return f, nil
}

// maxEnumerateBinaries is the most binaries for which NewFamily tries to enumerate Y_pb.
const maxEnumerateBinaries = 64

// Load reads a model file and builds its family.
func Load(path string) (*Family, error) {
	m, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return NewFamily(m)
}

// Name implements mpc.Family.
func (f *Family) Name() string { return Name }

// Model is the family's model (read only).
func (f *Family) Model() *Model { return f.m }

// Admissible implements mpc.Family.
func (f *Family) Admissible() *gbd.Admissible { return f.ypb }

// DecodeMeasurement implements mpc.Family.
func (f *Family) DecodeMeasurement(payload []byte) (mpc.Measurement, error) {
	in, err := f.m.Decode(payload)
	if err != nil {
		return nil, err
	}
	return &Measurement{Inst: in, fam: f}, nil
}

// Problem transcribes the model for an instance (one decoded by Decode).
func (f *Family) Problem(in *Instance) *gbd.Problem { return f.l.transcribe(in) }

// SafeAction implements mpc.Family: every unit in its safe_on state, every input at its safe value
// (or the configured safe action). With safe_hold the controller applies SafeActionFor instead.
func (f *Family) SafeAction() mpc.Action {
	if f.safe != nil {
		return f.safe
	}
	in, on := f.safeValues()
	return f.marshalApply(in, on)
}

// PlanFrom implements mpc.Family.
func (f *Family) PlanFrom(m mpc.Measurement, r *gbd.Result) (mpc.Plan, error) {
	mm, ok := m.(*Measurement)
	if !ok || mm.fam != f {
		return nil, fmt.Errorf("model: measurement %T is not of this family", m)
	}
	if r == nil || r.Y == nil || r.X == nil {
		return nil, fmt.Errorf("model: result has no incumbent")
	}
	if len(r.Y) != f.l.ny || len(r.X) != f.l.nx && len(r.X) != f.l.softNX() {
		return nil, fmt.Errorf("model: result has %d binaries and %d continuous values, want %d and %d (or %d, soft)",
			len(r.Y), len(r.X), f.l.ny, f.l.nx, f.l.softNX())
	}
	return f.newPlan(&mm.Inst, r.Y, r.X), nil
}

// Measurement is a validated instance of a Family.
type Measurement struct {
	Inst Instance
	fam  *Family
}

var (
	_ mpc.Measurement = (*Measurement)(nil)
	_ mpc.Starter     = (*Measurement)(nil)
)

// Problem implements mpc.Measurement.
func (m *Measurement) Problem() (*gbd.Problem, error) { return m.fam.l.transcribe(&m.Inst), nil }

// Instance implements mpc.Measurement.
func (m *Measurement) Instance() json.RawMessage { return m.fam.m.MarshalInstance(&m.Inst) }

// Start implements mpc.Starter: the measured unit states held over the horizon, when admissible.
func (m *Measurement) Start() (y, x []float64) {
	y = m.fam.l.rows.Hold(m.Inst.On)
	if !m.fam.ypb.Contains(y) {
		return nil, nil
	}
	return y, nil
}

// snap: a planned input this close to a limit is published as the limit (the NLP meets its bounds
// to solver tolerance only).
const snap = 1e-6

// Plan is a solved or shifted plan: per step t (0-based) the inputs and unit states applied during
// it and the states at its end.
type Plan struct {
	fam       *Family
	States0   []float64
	States    [][]float64 // [state][step], at the end of the step
	Inputs    [][]float64 // [input][step]
	On        [][]int     // [unit][step]
	Forecasts [][]float64 // [forecast][step]
	Y         []float64
	Shifted   int
}

var _ mpc.Plan = (*Plan)(nil)

func (f *Family) newPlan(in *Instance, y, x []float64) *Plan {
	m, l := f.m, f.l
	pl := &Plan{fam: f, States0: append([]float64(nil), in.States...), Y: append([]float64(nil), y...)}
	for s, st := range m.States {
		v := make([]float64, l.n)
		for t := range l.n {
			v[t] = math.Min(math.Max(x[l.stateIndex(s, t+1)], st.Lo), st.Hi)
		}
		pl.States = append(pl.States, v)
	}
	for u := range m.Units {
		on := make([]int, l.n)
		for t := range l.n {
			if y[l.yIndex(u, t/l.L)] > 0.5 {
				on[t] = 1
			}
		}
		pl.On = append(pl.On, on)
	}
	for i, inp := range m.Inputs {
		v := make([]float64, l.n)
		for t := range l.n {
			lo, hi := inp.Lo, inp.Hi
			if u := l.inputUnit[i]; u >= 0 {
				if pl.On[u][t] == 0 {
					continue // an off unit's input is 0
				}
				lo = inp.OnMin
			}
			q := x[l.inputIndex(i, t)]
			switch {
			case q <= lo+snap:
				q = lo
			case q >= hi-snap:
				q = hi
			}
			v[t] = q
		}
		pl.Inputs = append(pl.Inputs, v)
	}
	for _, fc := range in.Forecasts {
		pl.Forecasts = append(pl.Forecasts, append([]float64(nil), fc...))
	}
	return pl
}

// Apply implements mpc.Plan: step 0's inputs and unit states, by name.
func (pl *Plan) Apply() mpc.Action {
	in := make([]float64, len(pl.Inputs))
	on := make([]int, len(pl.On))
	for i := range in {
		in[i] = pl.Inputs[i][0]
	}
	for u := range on {
		on[u] = pl.On[u][0]
	}
	return pl.fam.marshalApply(in, on)
}

// marshalApply is the "apply" object: every input and every unit by name, in the model's order.
func (f *Family) marshalApply(in []float64, on []int) mpc.Action {
	var b bytes.Buffer
	b.WriteByte('{')
	sep := ""
	put := func(name string, v any) {
		k, _ := json.Marshal(name)
		x, err := json.Marshal(v)
		if err != nil {
			x = []byte("null")
		}
		b.WriteString(sep)
		b.Write(k)
		b.WriteByte(':')
		b.Write(x)
		sep = ","
	}
	for i, x := range f.m.Inputs {
		put(x.Name, in[i])
	}
	for u, x := range f.m.Units {
		put(x.Name, on[u])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Shift implements mpc.Plan: drop step 0 and repeat the last step.
func (pl *Plan) Shift() (mpc.Plan, bool) {
	n := pl.fam.l.n
	if pl.Shifted+1 >= n {
		return nil, false
	}
	out := &Plan{fam: pl.fam, Y: pl.Y, Shifted: pl.Shifted + 1}
	for _, v := range pl.States {
		out.States0 = append(out.States0, v[0])
		out.States = append(out.States, mpc.ShiftSteps(v, 1))
	}
	for _, v := range pl.Inputs {
		out.Inputs = append(out.Inputs, mpc.ShiftSteps(v, 1))
	}
	for _, v := range pl.Forecasts {
		out.Forecasts = append(out.Forecasts, mpc.ShiftSteps(v, 1))
	}
	for _, v := range pl.On {
		out.On = append(out.On, mpc.ShiftSteps(v, 1))
	}
	return out, true
}

func (pl *Plan) pattern() []float64 {
	l := pl.fam.l
	return mpc.Blocking{Steps: l.n, Blocks: l.nb}.ShiftPattern(pl.Y, pl.Shifted)
}

// Start implements mpc.Plan: the shifted block pattern (when admissible) and the trajectory as x,
// with the start indicators, soft-limit violations and epigraph variables it implies.
func (pl *Plan) Start() (y, x []float64) {
	f := pl.fam
	l, m := f.l, f.m
	y = pl.pattern()
	if !f.ypb.Contains(y) {
		y = nil
	}
	x = make([]float64, l.nx)
	for i := range m.Inputs {
		for t := range l.n {
			x[l.inputIndex(i, t)] = pl.Inputs[i][t]
		}
	}
	for s := range m.States {
		for t := range l.n {
			x[l.stateIndex(s, t+1)] = pl.States[s][t]
		}
	}
	if y != nil {
		for u := range m.Units {
			if l.start[u] < 0 {
				continue
			}
			for b := 1; b < l.nb; b++ {
				x[l.start[u]+b] = math.Max(0, y[l.yIndex(u, b)]-y[l.yIndex(u, b-1)])
			}
		}
	}
	for s, st := range m.States {
		for t := 1; t <= l.n; t++ {
			v := x[l.stateIndex(s, t)]
			if l.softLo[s] >= 0 {
				x[l.softLo[s]+t-1] = math.Max(0, st.SoftMin-v)
			}
			if l.softHi[s] >= 0 {
				x[l.softHi[s]+t-1] = math.Max(0, v-st.SoftMax)
			}
		}
	}
	for k, c := range m.Costs {
		if l.epi[k] < 0 {
			continue
		}
		for j, t := range l.costSteps(k) {
			a := c.Scale * (x[l.costVarIndex(k, t)] - c.Ref)
			z := math.Abs(a)
			if c.Atom == AtomPWL {
				z = pwl(c.Points, a)
			}
			x[l.epi[k]+j] = z
		}
	}
	return y, x
}

// planJSON is the action's "plan" object: per name, the values over the horizon.
type planJSON struct {
	Dt        float64              `json:"dt"`
	Shifted   int                  `json:"shifted"`
	Blocks    int                  `json:"blocks"`
	Y         []float64            `json:"y"`
	States0   map[string]float64   `json:"states0"`
	States    map[string][]float64 `json:"states"`
	Inputs    map[string][]float64 `json:"inputs"`
	Units     map[string][]int     `json:"units"`
	Forecasts map[string][]float64 `json:"forecasts"`
}

// JSON implements mpc.Plan.
func (pl *Plan) JSON() json.RawMessage {
	m := pl.fam.m
	out := planJSON{Dt: m.Dt, Shifted: pl.Shifted, Blocks: m.Blocks, Y: pl.Y,
		States0: map[string]float64{}, States: map[string][]float64{}, Inputs: map[string][]float64{},
		Units: map[string][]int{}, Forecasts: map[string][]float64{}}
	for s, st := range m.States {
		out.States0[st.Name], out.States[st.Name] = pl.States0[s], pl.States[s]
	}
	for i, x := range m.Inputs {
		out.Inputs[x.Name] = pl.Inputs[i]
	}
	for u, x := range m.Units {
		out.Units[x.Name] = pl.On[u]
	}
	for i, x := range m.Forecasts {
		out.Forecasts[x.Name] = pl.Forecasts[i]
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// ShiftDuals implements mpc.DualShifter by the times the layout's rows describe
// (mpc.RowTimes.ShiftDuals, which the pump station's rows use as well).
func (f *Family) ShiftDuals(d gbd.CutDuals, k int) []gbd.CutDuals { return f.l.rows.ShiftDuals(d, k) }

// DecodeApply parses an "apply" object of this family and checks it as the plant would: every
// input and unit by name, given once, units 0 or 1, inputs finite and within their range, a gated
// input 0 while its unit is off and within [on_min, max] while on. It returns the inputs and unit
// states in the model's order.
func (f *Family) DecodeApply(a mpc.Action) (inputs []float64, on []int, err error) {
	m := f.m
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(a, &raw); err != nil {
		return nil, nil, fmt.Errorf("model: apply: %w", err)
	}
	dup := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(a))
	if _, err := dec.Token(); err == nil {
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			name, _ := tok.(string)
			if dup[name] {
				return nil, nil, fmt.Errorf("model: apply: %q appears twice", name)
			}
			dup[name] = true
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				break
			}
		}
	}
	if len(raw) != len(m.Inputs)+len(m.Units) {
		return nil, nil, fmt.Errorf("model: apply has %d members, want the %d inputs and %d units by name", len(raw), len(m.Inputs), len(m.Units))
	}
	on = make([]int, len(m.Units))
	for u, unit := range m.Units {
		v, err := number(raw[unit.Name], unit.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("model: apply: %w", err)
		}
		if v != 0 && v != 1 {
			return nil, nil, fmt.Errorf("model: apply: unit %q = %v, want 0 or 1", unit.Name, v)
		}
		on[u] = int(v)
	}
	inputs = make([]float64, len(m.Inputs))
	for i, in := range m.Inputs {
		v, err := number(raw[in.Name], in.Name)
		if err != nil {
			return nil, nil, fmt.Errorf("model: apply: %w", err)
		}
		lo := in.Lo
		if u := f.l.inputUnit[i]; u >= 0 {
			if on[u] == 0 {
				if v != 0 {
					return nil, nil, fmt.Errorf("model: apply: input %q = %v while its unit %s is off", in.Name, v, in.Unit)
				}
				continue
			}
			lo = in.OnMin
		}
		if v < lo || v > in.Hi {
			return nil, nil, fmt.Errorf("model: apply: input %q = %v is outside [%v, %v]", in.Name, v, lo, in.Hi)
		}
		inputs[i] = v
	}
	return inputs, on, nil
}

// WithSafeAction returns the family with a fixed safe action (an "apply" object DecodeApply
// accepts) in place of the model's.
func (f *Family) WithSafeAction(a mpc.Action) (*Family, error) {
	in, on, err := f.DecodeApply(a)
	if err != nil {
		return nil, err
	}
	g := *f
	g.safe = f.marshalApply(in, on)
	return &g, nil
}

var _ mpc.Alternator = (*Measurement)(nil)

// Alternates implements mpc.Alternator as the pump station does: y with every running block of
// one unit handed to another unit that is off in those blocks, for each pair of substitutes — the
// plan that runs the same hours on another machine (another pump, chiller or genset), which GBD's
// master, its cuts made around the previous plan, is slow to try. Units are substitutes when
// inputs they gate enter some state's dynamics or some constraint with the same sign (three pumps
// filling one tank; a genset and a discharging battery feeding one balance). Each alternate costs
// the controller one subproblem; the engine skips those the rules forbid.
func (m *Measurement) Alternates(y []float64) [][]float64 {
	l := m.fam.l
	if len(y) != l.ny {
		return nil
	}
	return mpc.Blocking{Steps: l.n, Blocks: l.nb}.HandOvers(y, func(p, q int) bool { return l.subst[p][q] })
}
