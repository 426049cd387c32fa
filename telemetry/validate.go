package telemetry

import (
	"errors"
	"fmt"
	"math"
)

// Validate checks what offline replay relies on and nothing more: a known type with its payload and,
// for a master record, a positive NY with every cut of a known kind, NY finite coefficients and a
// finite constant. The writer refuses records that fail it, so a reader never meets one it wrote.
func (r *Record) Validate() error {
	switch r.Type {
	case TypeMaster:
		if r.Master == nil {
			return errors.New("master record without a master payload")
		}
		return r.Master.validate()
	case TypeSolve:
		if r.Solve == nil {
			return errors.New("solve record without a solve payload")
		}
		return nil
	}
	return fmt.Errorf("unknown record type %q", r.Type)
}

func (m *MasterRecord) validate() error {
	if m.NY <= 0 {
		return fmt.Errorf("master record has ny=%d, want > 0", m.NY)
	}
	if m.CutsFrom < 0 {
		return fmt.Errorf("master record has cuts_from=%d, want ≥ 0", m.CutsFrom)
	}
	for i := range m.Cuts {
		c := &m.Cuts[i]
		if c.Kind != CutOptimality && c.Kind != CutFeasibility {
			return fmt.Errorf("cut %d has unknown kind %q", i, c.Kind)
		}
		if len(c.Coef) != m.NY {
			return fmt.Errorf("cut %d has %d coefficients, want ny=%d", i, len(c.Coef), m.NY)
		}
		for j, a := range c.Coef {
			if math.IsNaN(a) || math.IsInf(a, 0) {
				return fmt.Errorf("cut %d coefficient %d is %v", i, j, a)
			}
		}
		if math.IsNaN(c.Const) || math.IsInf(c.Const, 0) {
			return fmt.Errorf("cut %d constant is %v", i, c.Const)
		}
	}
	return nil
}
