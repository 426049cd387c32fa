package gbd

import (
	"fmt"

	"gbdmpc/internal/enum"
)

// CutKind tells an optimality cut (μ_B ≥ φ_o(y)) from a feasibility cut (φ_f(y) ≤ 0).
type CutKind uint8

const (
	OptimalityCut CutKind = iota
	FeasibilityCut
)

var cutKindNames = [...]string{
	OptimalityCut:  "optimality",
	FeasibilityCut: "feasibility",
}

func (k CutKind) String() string { return enum.Name(cutKindNames[:], k, "CutKind") }

// ParseCutKind reads a kind as String writes it ("optimality", "feasibility"), the form decision
// logs and dataset files store.
func ParseCutKind(s string) (CutKind, error) {
	if k, ok := enum.Parse[CutKind](cutKindNames[:], s); ok {
		return k, nil
	}
	return 0, fmt.Errorf("unknown cut kind %q (want optimality or feasibility)", s)
}

// MarshalText implements encoding.TextMarshaler: a kind is stored as its name.
func (k CutKind) MarshalText() ([]byte, error) {
	if k != OptimalityCut && k != FeasibilityCut {
		return nil, fmt.Errorf("gbd: %v is not a cut kind", k)
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (ParseCutKind).
func (k *CutKind) UnmarshalText(b []byte) error {
	v, err := ParseCutKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Cut is one Benders cut, an affine function of the binaries: φ(y) = Coef·y + Const.
// Because y enters the MINLP linearly, every GBD cut has this form (paper eqs. for φ_o and φ_f).
type Cut struct {
	Kind  CutKind
	Coef  []float64 // one coefficient per binary, len == Problem.NY
	Const float64
	// Iter is the GBD iteration whose subproblem produced the cut (-1 for a carried cut).
	Iter int
	// Carried marks a cut re-evaluated from an earlier control step rather than produced in this solve.
	Carried bool
}

// Eval returns φ(y).
func (c *Cut) Eval(y []float64) float64 {
	s := c.Const
	for i, a := range c.Coef {
		s += a * y[i]
	}
	return s
}

// RHS is the right-hand side the paper's graph encoding uses as a constraint-node feature: the cut
// written with its y terms on the left (Coef·y ≤ −Const for a feasibility cut, Coef·y − μ_B ≤ −Const
// for an optimality cut).
func (c *Cut) RHS() float64 { return -c.Const }
