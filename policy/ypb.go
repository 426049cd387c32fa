package policy

import (
	"fmt"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/staged"
)

// pureRecord is one pure binary row Σ coef·y[idx] ≤ rhs of an implicit Y_pb, as files store it.
type pureRecord struct {
	Idx  []int     `json:"idx"`
	Coef []float64 `json:"coef"`
	RHS  float64   `json:"rhs"`
}

// ypbRecord is how dataset and policy files store an action space (embedded in their headers, beside
// its signature): an enumerated Y_pb as its ordered assignments ("0101…" strings), an implicit one
// (too large to enumerate) as its pure rows and stages, from which the signature is recomputed on
// reading.
type ypbRecord struct {
	Ypb    []string     `json:"ypb"`
	Pure   []pureRecord `json:"pure,omitempty"`
	Stages [][]int      `json:"stages,omitempty"`
}

func ypbRecordOf(a *gbd.Admissible) ypbRecord {
	var rec ypbRecord
	if !a.Implicit() {
		rec.Ypb = ypbStrings(a)
		if a.Stages == nil || a.Rows == nil {
			return rec
		}
		// An enumerated set with stages keeps its rows and stages too: the structured decoder
		// searches them.
	}
	rec.Pure = make([]pureRecord, len(a.Rows))
	for i, r := range a.Rows {
		rec.Pure[i] = pureRecord{Idx: r.Idx, Coef: r.Coef, RHS: r.RHS}
	}
	rec.Stages = a.Stages
	return rec
}

// read rebuilds the action space and insists that it is the set the signature names. An implicit
// set must be staged (the structured decoder and the staged master work over its stages), which is
// checked here so that a damaged file is refused on reading. An enumerated set may carry its rows
// and stages too; its rows must then admit exactly its assignments.
func (r *ypbRecord) read(ny int, sig string) (*gbd.Admissible, error) {
	rows, pure, stages := r.Ypb, r.Pure, r.Stages
	if len(pure) == 0 {
		if stages != nil {
			return nil, fmt.Errorf("admissible set: stages without pure rows")
		}
		return parseYpb(ny, rows, sig)
	}
	if ny <= 0 || ny > 1024 {
		return nil, fmt.Errorf("number of binaries %d out of range", ny)
	}
	pr := make([]gbd.PureRow, len(pure))
	for i, p := range pure {
		pr[i] = gbd.PureRow{Idx: p.Idx, Coef: p.Coef, RHS: p.RHS}
	}
	var a *gbd.Admissible
	var err error
	if len(rows) != 0 {
		if stages == nil {
			return nil, fmt.Errorf("admissible set: assignments and pure rows without stages")
		}
		if a, err = parseYpb(ny, rows, sig); err != nil {
			return nil, err
		}
		// The rows must admit these assignments and no others.
		b, err := gbd.EnumerateAdmissible(ny, pr, len(rows))
		if err != nil || b.Signature != a.Signature {
			return nil, fmt.Errorf("admissible set: its pure rows do not admit exactly its %d assignments", len(rows))
		}
		a.Rows = pr
	} else {
		if a, err = gbd.ImplicitAdmissible(ny, pr); err != nil {
			return nil, err
		}
		if a.Signature != sig {
			return nil, fmt.Errorf("admissible set signature %.12s… does not match its rows (%.12s…)", sig, a.Signature)
		}
	}
	a.Stages = stages
	var m staged.Master
	if err := m.Reset(ny, pr, a); err != nil {
		return nil, fmt.Errorf("admissible set: %w", err)
	}
	return a, nil
}

// sameSpace reports whether two action spaces are the same set (the signature covers the
// assignments of an enumerated set, the rows of an implicit one).
func sameSpace(a, b *gbd.Admissible) bool {
	return a.NY == b.NY && a.Signature == b.Signature && a.Implicit() == b.Implicit()
}
