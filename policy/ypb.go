package policy

import (
	"fmt"

	"gbdmpc/gbd"
)

// pureRecord is one pure binary row Σ coef·y[idx] ≤ rhs of an implicit Y_pb, as files store it.
type pureRecord struct {
	Idx  []int     `json:"idx"`
	Coef []float64 `json:"coef"`
	RHS  float64   `json:"rhs"`
}

// ypbFields is how dataset and policy files store an action space: an enumerated Y_pb as its ordered
// assignments ("0101…" strings), an implicit one (too large to enumerate) as its pure rows and
// stages, from which the signature is recomputed on reading.
func ypbFields(a *gbd.Admissible) (rows []string, pure []pureRecord, stages [][]int) {
	if !a.Implicit() {
		return ypbStrings(a), nil, nil
	}
	pure = make([]pureRecord, len(a.Rows))
	for i, r := range a.Rows {
		pure[i] = pureRecord{Idx: r.Idx, Coef: r.Coef, RHS: r.RHS}
	}
	return nil, pure, a.Stages
}

// readYpb rebuilds the action space of ypbFields and insists that it is the set the signature
// names. An implicit set must be staged (the structured decoder and the staged master work over
// its stages), which is checked here so that a damaged file is refused on reading.
func readYpb(ny int, rows []string, pure []pureRecord, stages [][]int, sig string) (*gbd.Admissible, error) {
	if len(pure) == 0 {
		if stages != nil {
			return nil, fmt.Errorf("admissible set: stages without pure rows")
		}
		return parseYpb(ny, rows, sig)
	}
	if len(rows) != 0 {
		return nil, fmt.Errorf("admissible set: both assignments and pure rows")
	}
	if ny <= 0 || ny > 1024 {
		return nil, fmt.Errorf("number of binaries %d out of range", ny)
	}
	pr := make([]gbd.PureRow, len(pure))
	for i, r := range pure {
		pr[i] = gbd.PureRow{Idx: r.Idx, Coef: r.Coef, RHS: r.RHS}
	}
	a, err := gbd.ImplicitAdmissible(ny, pr)
	if err != nil {
		return nil, err
	}
	if a.Signature != sig {
		return nil, fmt.Errorf("admissible set signature %.12s… does not match its rows (%.12s…)", sig, a.Signature)
	}
	a.Stages = stages
	var m gbd.StagedMaster
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
