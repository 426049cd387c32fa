package synthesis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gbdmpc/gbd"
	"gbdmpc/internal/strictjson"
)

// Family is the plant family name used in instances, policy files and decision logs.
const Family = "synthesis"

// NY is the number of binaries y1..y5; NX the number of continuous variables.
const (
	NY = 5
	NX = 6
)

// Continuous variable order.
const (
	x3 = iota
	x5
	x9
	x11
	x13
	x16
)

// Instance is one parameter set θ = (γ1..γ5, U, ρ1, ρ2), in the JSON form of specs/interfaces.md.
type Instance struct {
	V     int       `json:"v"`
	Gamma []float64 `json:"gamma"`
	U     float64   `json:"U"`
	Rho   []float64 `json:"rho"`
}

// Sampling ranges of the paper's case study.
var (
	URange     = [2]float64{6, 14}
	RhoRange   = [2]float64{0, 2}
	GammaRange = [2]float64{1, 39} // γ1..γ4
	Gamma5     = [2]float64{1, 7}
)

// ErrInstance is wrapped by every validation error.
var ErrInstance = errors.New("invalid synthesis instance")

// Validate checks the instance's shape and values. U must be positive (it is a big-M); ρ must be
// non-negative (a negative ρ makes E9/E10 unsatisfiable for any y).
func (in *Instance) Validate() error {
	if in.V != 1 {
		return fmt.Errorf("%w: \"v\" is %d, want 1", ErrInstance, in.V)
	}
	if len(in.Gamma) != NY {
		return fmt.Errorf("%w: \"gamma\" has %d values, want %d", ErrInstance, len(in.Gamma), NY)
	}
	if len(in.Rho) != 2 {
		return fmt.Errorf("%w: \"rho\" has %d values, want 2", ErrInstance, len(in.Rho))
	}
	for i, g := range in.Gamma {
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return fmt.Errorf("%w: gamma[%d] is not finite", ErrInstance, i)
		}
	}
	if math.IsNaN(in.U) || math.IsInf(in.U, 0) || in.U <= 0 {
		return fmt.Errorf("%w: \"U\" must be a positive finite number, got %v", ErrInstance, in.U)
	}
	for i, r := range in.Rho {
		if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
			return fmt.Errorf("%w: rho[%d] must be a non-negative finite number, got %v", ErrInstance, i, r)
		}
	}
	return nil
}

// Decode parses and validates one JSON instance.
func Decode(data []byte) (Instance, error) {
	var in Instance
	if err := strictjson.Unmarshal(data, &in); err != nil {
		return Instance{}, fmt.Errorf("%w: %v", ErrInstance, err)
	}
	if err := in.Validate(); err != nil {
		return Instance{}, err
	}
	return in, nil
}

// Feasible reports whether the MINLP has a feasible point. Because x ≥ 0 gives exp(·) ≥ 1, E9 with
// y1 = 0 needs ρ1 ≥ 1 and E10 with y2 = 0 needs ρ2 ≥ 1; E14 switches exactly one of y1, y2 off.
func (in *Instance) Feasible() bool { return in.Rho[0] >= 1 || in.Rho[1] >= 1 }

// Sample draws θ uniformly from the paper's ranges.
func Sample(rng *rand.Rand) Instance {
	u := func(r [2]float64) float64 { return r[0] + (r[1]-r[0])*rng.Float64() }
	in := Instance{V: 1, Gamma: make([]float64, NY), Rho: make([]float64, 2)}
	for i := 0; i < 4; i++ {
		in.Gamma[i] = u(GammaRange)
	}
	in.Gamma[4] = u(Gamma5)
	in.U = u(URange)
	in.Rho[0], in.Rho[1] = u(RhoRange), u(RhoRange)
	return in
}

// SampleFeasible draws until a feasible parameter set comes up (the paper's "feasible parameter sets").
func SampleFeasible(rng *rand.Rand) Instance {
	for {
		in := Sample(rng)
		if in.Feasible() {
			return in
		}
	}
}

// Problem builds the MINLP E1–E15 of specs/synthesis.md for θ.
func Problem(in Instance) *gbd.Problem {
	inf := math.Inf(1)
	p := &gbd.Problem{
		Name:   "synthesis",
		NX:     NX,
		XLo:    []float64{0, 0, 0, 0, 0, 0},
		XHi:    []float64{2, 2, 2, inf, inf, 3},
		XNames: []string{"x3", "x5", "x9", "x11", "x13", "x16"},
		NY:     NY,
		YNames: []string{"y1", "y2", "y3", "y4", "y5"},
	}
	lnArg := func(w float64) gbd.Term { // w·ln(x11 + x13 + 1)
		return gbd.Term{Weight: w, Atom: gbd.AtomLog, Idx: []int{x11, x13}, Coef: []float64{1, 1}, Shift: 1}
	}
	exp3 := gbd.Term{Weight: 1, Atom: gbd.AtomExp, Idx: []int{x3}, Coef: []float64{1}}
	exp5 := gbd.Term{Weight: 1, Atom: gbd.AtomExp, Idx: []int{x5}, Coef: []float64{1 / 1.2}}
	// E1
	p.Objective = gbd.Expr{
		Name:  "E1",
		Terms: []gbd.Term{exp3, exp5, lnArg(-60)},
		Idx:   []int{x3, x5, x9, x11, x13, x16},
		Coef:  []float64{-10, -15, -15, 15, 5, -20},
		YIdx:  []int{0, 1, 2, 3, 4},
		YCoef: append([]float64(nil), in.Gamma...),
		Const: 140,
	}
	row := func(name string, idx []int, coef []float64) gbd.Expr {
		return gbd.Expr{Name: name, Idx: idx, Coef: coef}
	}
	p.Ineq = []gbd.Expr{
		{Name: "E2", Terms: []gbd.Term{lnArg(-1)}},
		row("E3", []int{x3, x5, x9, x11, x16}, []float64{-1, -1, -2, 1, 2}),
		row("E4", []int{x3, x5, x9, x11, x16}, []float64{-1, -1, -0.75, 1, 2}),
		row("E5", []int{x9, x16}, []float64{1, -1}),
		row("E6", []int{x9, x11, x16}, []float64{2, -1, -2}),
		row("E7", []int{x11, x13}, []float64{-0.5, 1}),
		row("E8", []int{x11, x13}, []float64{0.2, -1}),
		{Name: "E9", Terms: []gbd.Term{exp3}, YIdx: []int{0}, YCoef: []float64{-in.U}, Const: -in.Rho[0]},
		{Name: "E10", Terms: []gbd.Term{exp5}, YIdx: []int{1}, YCoef: []float64{-in.U}, Const: -in.Rho[1]},
		{Name: "E11", Idx: []int{x9}, Coef: []float64{1.25}, YIdx: []int{2}, YCoef: []float64{-in.U}},
		{Name: "E12", Idx: []int{x11, x13}, Coef: []float64{1, 1}, YIdx: []int{3}, YCoef: []float64{-in.U}},
		{Name: "E13", Idx: []int{x9, x16}, Coef: []float64{-2, 2}, YIdx: []int{4}, YCoef: []float64{-in.U}},
	}
	p.Pure = PureRows()
	return p
}

// PureRows are E14 (y1 + y2 = 1, as two rows) and E15 (y4 + y5 ≤ 1). They depend on no parameter,
// so Y_pb is the same for every instance.
func PureRows() []gbd.PureRow {
	return []gbd.PureRow{
		{Idx: []int{0, 1}, Coef: []float64{1, 1}, RHS: 1},
		{Idx: []int{0, 1}, Coef: []float64{-1, -1}, RHS: -1},
		{Idx: []int{3, 4}, Coef: []float64{1, 1}, RHS: 1},
	}
}

// Admissible is the family's Y_pb (12 assignments).
func Admissible() *gbd.Admissible {
	a, err := gbd.EnumerateAdmissible(NY, PureRows(), 0)
	if err != nil {
		panic("synthesis: fixed pure binary rows failed to enumerate: " + err.Error()) // cannot happen: constant data
	}
	return a
}

// MarshalInstance is the canonical JSON of an instance (used in decision logs and datasets).
func MarshalInstance(in Instance) json.RawMessage {
	b, _ := json.Marshal(in)
	return b
}
