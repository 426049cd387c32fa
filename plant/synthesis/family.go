package synthesis

import (
	"encoding/json"
	"fmt"
	"math"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// MPCFamily is the synthesis case study as an mpc.Family: a one-shot "plant" whose measurement is a
// parameter set θ and whose plan is the optimal design (y, x). There is no horizon, so shifting
// keeps the plan as it is, and a fallback re-publishes the last design.
type MPCFamily struct {
	ypb *gbd.Admissible
}

var _ mpc.Family = (*MPCFamily)(nil)

// NewFamily returns the synthesis family.
func NewFamily() *MPCFamily { return &MPCFamily{ypb: Admissible()} }

// Name implements mpc.Family.
func (f *MPCFamily) Name() string { return Family }

// Admissible implements mpc.Family.
func (f *MPCFamily) Admissible() *gbd.Admissible { return f.ypb }

// DecodeMeasurement implements mpc.Family.
func (f *MPCFamily) DecodeMeasurement(payload []byte) (mpc.Measurement, error) {
	in, err := Decode(payload)
	if err != nil {
		return nil, err
	}
	return &Measurement{Inst: in}, nil
}

// SafeAction implements mpc.Family: without a design there is nothing to apply.
func (f *MPCFamily) SafeAction() mpc.Action { return json.RawMessage(`{"y":null,"x":null}`) }

// PlanFrom implements mpc.Family.
func (f *MPCFamily) PlanFrom(m mpc.Measurement, r *gbd.Result) (mpc.Plan, error) {
	if _, ok := m.(*Measurement); !ok {
		return nil, fmt.Errorf("synthesis: measurement %T is not of this family", m)
	}
	if r == nil || len(r.Y) != NY || len(r.X) != NX {
		return nil, fmt.Errorf("synthesis: result has no incumbent of %d binaries and %d continuous values", NY, NX)
	}
	return &Plan{Y: append([]float64(nil), r.Y...), X: append([]float64(nil), r.X...)}, nil
}

// Measurement is one validated parameter set.
type Measurement struct {
	Inst Instance
}

var _ mpc.Measurement = (*Measurement)(nil)

// Problem implements mpc.Measurement.
func (m *Measurement) Problem() (*gbd.Problem, error) { return Problem(m.Inst), nil }

// Instance implements mpc.Measurement.
func (m *Measurement) Instance() json.RawMessage { return MarshalInstance(m.Inst) }

// Plan is a design: the binaries y1..y5 and the continuous x in the order of Problem's XNames.
type Plan struct {
	Y, X []float64
}

var _ mpc.Plan = (*Plan)(nil)

type planJSON struct {
	Y []float64 `json:"y"`
	X []float64 `json:"x"`
}

func (p *Plan) marshal() json.RawMessage {
	b, err := json.Marshal(planJSON{Y: p.Y, X: p.X})
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

var _ mpc.PlanDecoder = (*MPCFamily)(nil)

// DecodePlan implements mpc.PlanDecoder: {"y":[NY binaries],"x":[NX finite values]}.
func (f *MPCFamily) DecodePlan(raw json.RawMessage) (mpc.Plan, error) {
	var pj planJSON
	if err := json.Unmarshal(raw, &pj); err != nil {
		return nil, fmt.Errorf("synthesis: plan: %w", err)
	}
	if pj.Y == nil && pj.X == nil {
		return nil, fmt.Errorf("synthesis: plan: no design (null plan)")
	}
	if len(pj.Y) != NY || len(pj.X) != NX {
		return nil, fmt.Errorf("synthesis: plan: %d binaries and %d continuous values, want %d and %d", len(pj.Y), len(pj.X), NY, NX)
	}
	for i, v := range pj.Y {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("synthesis: plan: y[%d] = %v is not 0 or 1", i, v)
		}
	}
	if f.ypb.Index(pj.Y) < 0 {
		return nil, fmt.Errorf("synthesis: plan: y %v is not admissible", pj.Y)
	}
	for i, v := range pj.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("synthesis: plan: x[%d] is not finite", i)
		}
	}
	return &Plan{Y: pj.Y, X: pj.X}, nil
}

// Apply implements mpc.Plan: the whole design is the move.
func (p *Plan) Apply() mpc.Action { return p.marshal() }

// JSON implements mpc.Plan.
func (p *Plan) JSON() json.RawMessage { return p.marshal() }

// Shift implements mpc.Plan: a one-shot design does not age.
func (p *Plan) Shift() (mpc.Plan, bool) { return p, true }

// Start implements mpc.Plan: the last design is the first iterate of the next solve.
func (p *Plan) Start() (y, x []float64) { return p.Y, p.X }
