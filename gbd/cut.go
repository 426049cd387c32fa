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
// A stage cut (stagecut.go) adds a table per stage of Y_pb: φ(y) = Coef·y + Const + Σ_s E_s[y_s].
// A cut may also carry the problem's hinges (hinge.go), exact costs of a few binaries each (≥ 0).
// Its affine part alone is a valid cut too (the tables are ≥ 0 excesses over it), so a consumer
// that reads Coef and Const only (the CBC master, the agent's encoding, the decision log) holds a
// valid, weaker cut.
type Cut struct {
	Kind  CutKind
	Coef  []float64 // one coefficient per binary, len == Problem.NY
	Const float64
	// Tables, when not nil, are the stage cut's tables (read only; shared by the cut's copies).
	Tables *StageTables
	// Hinges, when not nil, are the problem's hinges (hinge.go), which the cut adds to its affine
	// part and tables exactly: φ(y) = Coef·y + Const + Σ_s E_s[y_s] + H(y) (read only; shared).
	Hinges *Hinges
	// Iter is the GBD iteration whose subproblem produced the cut (-1 for a carried cut).
	Iter int
	// Carried marks a cut re-evaluated from an earlier control step rather than produced in this solve.
	Carried bool
}

// Eval returns φ(y); the tables, if any, read y's binaries as set when above ½.
func (c *Cut) Eval(y []float64) float64 {
	s := c.Affine(y)
	if c.Tables != nil {
		s += c.Tables.Eval(y)
	}
	if c.Hinges != nil {
		s += c.Hinges.Eval(y)
	}
	return s
}

// Affine returns the cut's affine part Coef·y + Const alone (without tables and hinges): a valid
// cut too, and what a decision log keeps.
func (c *Cut) Affine(y []float64) float64 {
	s := c.Const
	for i, a := range c.Coef {
		s += a * y[i]
	}
	return s
}

// StageTables are a stage cut's tables: for stage s (the binaries Stages[s], bit j of a pattern
// for Stages[s][j]), Excess[s][pattern] ≥ 0 is what the cut adds to its affine part there.
// Patterns outside Y_pb's stage patterns hold 0.
type StageTables struct {
	Stages [][]int
	Excess [][]float64
}

// Eval returns Σ_s Excess[s][pattern of y in stage s].
func (t *StageTables) Eval(y []float64) float64 {
	v := 0.0
	for s, st := range t.Stages {
		v += t.Excess[s][StagePattern(st, y)]
	}
	return v
}

// StagePattern is y's pattern in the stage of binaries st: bit j set when y[st[j]] is above ½.
func StagePattern(st []int, y []float64) int {
	m := 0
	for j, i := range st {
		if y[i] > 0.5 {
			m |= 1 << j
		}
	}
	return m
}

// RHS is the right-hand side the paper's graph encoding uses as a constraint-node feature: the cut
// written with its y terms on the left (Coef·y ≤ −Const for a feasibility cut, Coef·y − μ_B ≤ −Const
// for an optimality cut).
func (c *Cut) RHS() float64 { return -c.Const }
