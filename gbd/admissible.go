package gbd

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
)

// PureRow is one pure binary constraint Σ_i Coef[i]·y[Idx[i]] ≤ RHS (paper eq. K y ≤ b). Equalities
// are written as two rows.
type PureRow struct {
	Idx  []int
	Coef []float64
	RHS  float64
}

// Admissible is the ordered admissible set Y_pb = {y ∈ {0,1}^m : K y ≤ b}. Its order is the agent's
// action space, so it is fixed by the enumeration (lexicographic, y[0] most significant, 0 before 1)
// and fingerprinted by Signature.
//
// A set too large to enumerate is implicit (ImplicitAdmissible): it keeps the rows K y ≤ b instead of
// the assignments, Count is 0, and membership (Contains) is a check of the rows. The engine then
// needs a master that works from the rows (gbd/master/cbc, gbd/master/staged) and a policy that
// proposes assignments directly (Proposal.Assign).
type Admissible struct {
	NY     int
	Assign []uint8 // Count()*NY values, row-major; nil for an implicit set
	// Signature is a hex SHA-256 of NY and every assignment in order (of NY and the rows for an
	// implicit set): two sets with the same signature are the same action space.
	Signature string
	// Rows are K y ≤ b, kept by ImplicitAdmissible and EnumerateAdmissible (nil for a set made from
	// its assignments alone, NewAdmissible); the staged decoder of a set with Stages needs them.
	Rows     []PureRow
	implicit bool
	// Stages, when set by the family, partitions the binaries into stages (a plan's move blocks)
	// such that every pure row touches at most three consecutive stages: the structure
	// the staged master (gbd/master/staged) searches. It is not part of the signature.
	Stages [][]int

	packOnce sync.Once
	packed   []uint64 // assignment j as a bit mask (bit i = y[i]), for NY ≤ 64; built on first use
}

// Masks returns every assignment as a bit mask, bit i holding y[i], or nil when NY > 64. It is built
// once and shared; callers must not modify it.
func (a *Admissible) Masks() []uint64 {
	if a.NY > 64 || a.implicit {
		return nil
	}
	a.packOnce.Do(func() {
		n := a.Count()
		a.packed = make([]uint64, n)
		for j := range n {
			var m uint64
			for i, v := range a.At(j) {
				m |= uint64(v) << i
			}
			a.packed[j] = m
		}
	})
	return a.packed
}

// Implicit reports whether the set is given by its rows only (not enumerated).
func (a *Admissible) Implicit() bool { return a.implicit }

// Empty reports whether the set is known to have no assignment. An implicit set is never known
// empty: the master finds out.
func (a *Admissible) Empty() bool { return !a.implicit && a.Count() == 0 }

// Contains reports whether y (len NY) lies in the set: an enumerated set rounds y's values at 0.5
// (as Index does), an implicit one requires exact 0/1 values.
func (a *Admissible) Contains(y []float64) bool {
	if len(y) != a.NY {
		return false
	}
	if !a.implicit {
		return a.Index(y) >= 0
	}
	for _, v := range y {
		if v != 0 && v != 1 {
			return false
		}
	}
	return SatisfiesPure(a.Rows, y)
}

// SatisfiesPure reports whether the 0/1 vector y satisfies every row of K y ≤ b (tolerance 1e-9).
func SatisfiesPure(rows []PureRow, y []float64) bool {
	for r := range rows {
		if rows[r].Eval(y) > rows[r].RHS+1e-9 {
			return false
		}
	}
	return true
}

// Eval is Σ_i Coef[i]·y[Idx[i]].
func (r *PureRow) Eval(y []float64) float64 { return sparseDot(r.Coef, r.Idx, y) }

// sparseDot is Σ_k coef[k]·x[idx[k]], the one product of gbd's sparse rows (pure rows, the y part
// of an expression, an atom's argument).
func sparseDot(coef []float64, idx []int, x []float64) float64 {
	s := 0.0
	for k, i := range idx {
		s += coef[k] * x[i]
	}
	return s
}

// First writes the lexicographically first admissible assignment into dst (len NY) and reports
// whether there is one. For an implicit set it is found by the pruned depth-first search of
// EnumerateAdmissible, stopped at the first leaf.
func (a *Admissible) First(dst []float64) bool {
	if !a.implicit {
		if a.Count() == 0 {
			return false
		}
		a.Float(0, dst)
		return true
	}
	var first []uint8
	err := walkAdmissible(a.NY, a.Rows, func(y []uint8) bool {
		first = append(first, y...)
		return false
	})
	if err != nil || first == nil {
		return false
	}
	Floats(dst, first)
	return true
}

// ImplicitAdmissible is the set K y ≤ b given by its rows, for spaces too large to enumerate.
func ImplicitAdmissible(ny int, rows []PureRow) (*Admissible, error) {
	if err := checkRows(ny, rows); err != nil {
		return nil, err
	}
	h := sha256.New()
	var buf [8]byte
	word := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	h.Write([]byte("implicit"))
	word(uint64(ny))
	for _, r := range rows {
		word(uint64(len(r.Idx)))
		for k, i := range r.Idx {
			word(uint64(i))
			word(math.Float64bits(r.Coef[k]))
		}
		word(math.Float64bits(r.RHS))
	}
	return &Admissible{NY: ny, Rows: rows, implicit: true, Signature: hex.EncodeToString(h.Sum(nil))}, nil
}

// AdmissibleOrImplicit enumerates Y_pb when it has at most max assignments (≤ 0: DefaultMaxAdmissible)
// and falls back to the implicit set otherwise.
func AdmissibleOrImplicit(ny int, rows []PureRow, max int) (*Admissible, error) {
	a, err := EnumerateAdmissible(ny, rows, max)
	if errors.Is(err, ErrTooManyAssignments) {
		return ImplicitAdmissible(ny, rows)
	}
	return a, err
}

// DefaultMaxAdmissible bounds the size of Y_pb that EnumerateAdmissible accepts when none is given:
// 2^18 = 262,144 assignments, a few MB, which the enum master's byte-table scan covers per cut far
// faster than CBC solves the MILP (the 24-binary reference station, 119,713 assignments, is
// within it; the 40-binary one, 26.9 million, is not).
const DefaultMaxAdmissible = 1 << 18

// ErrTooManyAssignments is returned (wrapped) when Y_pb exceeds the configured size.
var ErrTooManyAssignments = errors.New("admissible set too large")

// Count is |Y_pb|.
func (a *Admissible) Count() int {
	if a.NY == 0 {
		return 0
	}
	return len(a.Assign) / a.NY
}

// At returns assignment j as a slice aliasing the set's storage; callers must not modify it.
func (a *Admissible) At(j int) []uint8 { return a.Assign[j*a.NY : (j+1)*a.NY] }

// Float writes assignment j into dst (len NY) as 0/1 floats and returns it.
func (a *Admissible) Float(j int, dst []float64) []float64 { return Floats(dst, a.At(j)) }

// Floats writes an assignment's 0/1 values into dst (len ≥ len(bits)) as floats and returns
// dst[:len(bits)].
func Floats(dst []float64, bits []uint8) []float64 {
	dst = dst[:len(bits)]
	for i, v := range bits {
		dst[i] = float64(v)
	}
	return dst
}

// Index returns the position of y in Y_pb, or -1 when y is not admissible (or not binary).
func (a *Admissible) Index(y []float64) int {
	// Binary search is possible because the enumeration is lexicographic.
	lo, hi := 0, a.Count()
	for lo < hi {
		mid := (lo + hi) / 2
		c := compareAssign(a.At(mid), y)
		switch {
		case c == 0:
			return mid
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

func compareAssign(x []uint8, y []float64) int {
	for i, v := range x {
		yi := uint8(0)
		if y[i] > 0.5 {
			yi = 1
		}
		if v != yi {
			if v < yi {
				return -1
			}
			return 1
		}
	}
	return 0
}

// EnumerateAdmissible lists every y ∈ {0,1}^ny with K y ≤ b by depth-first search that prunes a
// branch as soon as some row cannot be satisfied by any completion, so the work is proportional to
// |Y_pb|·ny·rows rather than 2^ny. max ≤ 0 means DefaultMaxAdmissible.
func EnumerateAdmissible(ny int, rows []PureRow, max int) (*Admissible, error) {
	if max <= 0 {
		max = DefaultMaxAdmissible
	}
	a := &Admissible{NY: ny}
	tooMany := false
	err := walkAdmissible(ny, rows, func(y []uint8) bool {
		if a.Count() >= max {
			tooMany = true
			return false
		}
		a.Assign = append(a.Assign, y...)
		return true
	})
	if err != nil {
		return nil, err
	}
	if tooMany {
		return nil, fmt.Errorf("enumerate admissible set: more than %d assignments of %d binaries: %w", max, ny, ErrTooManyAssignments)
	}
	a.Signature = signature(ny, a.Assign)
	a.Rows = rows
	return a, nil
}

func checkRows(ny int, rows []PureRow) error {
	if ny <= 0 {
		return fmt.Errorf("enumerate admissible set: need at least one binary, got %d", ny)
	}
	for r, row := range rows {
		if len(row.Idx) != len(row.Coef) {
			return fmt.Errorf("pure binary row %d: %d indices but %d coefficients", r, len(row.Idx), len(row.Coef))
		}
		if math.IsNaN(row.RHS) || math.IsInf(row.RHS, 0) {
			return fmt.Errorf("pure binary row %d: right-hand side %v is not finite", r, row.RHS)
		}
		for k, i := range row.Idx {
			if i < 0 || i >= ny {
				return fmt.Errorf("pure binary row %d: index %d out of range [0,%d)", r, i, ny)
			}
			if c := row.Coef[k]; math.IsNaN(c) || math.IsInf(c, 0) {
				return fmt.Errorf("pure binary row %d: coefficient %v is not finite", r, c)
			}
		}
	}
	return nil
}

// walkAdmissible visits every y ∈ {0,1}^ny with K y ≤ b in lexicographic order (y[0] most
// significant, 0 before 1), by depth-first search that prunes a branch as soon as some row cannot
// be satisfied by any completion. visit returns false to stop the walk.
func walkAdmissible(ny int, rows []PureRow, visit func(y []uint8) bool) error {
	if err := checkRows(ny, rows); err != nil {
		return err
	}
	const tol = 1e-9
	nr := len(rows)
	// Dense coefficients per row, and for each row and depth the least the remaining binaries can add.
	coef := make([]float64, nr*ny)
	rest := make([]float64, nr*(ny+1))
	for r, row := range rows {
		for k, i := range row.Idx {
			coef[r*ny+i] += row.Coef[k]
		}
		for d := ny - 1; d >= 0; d-- {
			rest[r*(ny+1)+d] = rest[r*(ny+1)+d+1] + math.Min(0, coef[r*ny+d])
		}
	}
	y := make([]uint8, ny)
	lhs := make([]float64, nr)
	stop := false
	var dfs func(d int)
	dfs = func(d int) {
		if stop {
			return
		}
		if d == ny {
			stop = !visit(y)
			return
		}
		for v := uint8(0); v <= 1 && !stop; v++ {
			ok := true
			for r := 0; r < nr; r++ {
				l := lhs[r] + float64(v)*coef[r*ny+d]
				if l+rest[r*(ny+1)+d+1] > rows[r].RHS+tol {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			y[d] = v
			for r := 0; r < nr; r++ {
				lhs[r] += float64(v) * coef[r*ny+d]
			}
			dfs(d + 1)
			for r := 0; r < nr; r++ {
				lhs[r] -= float64(v) * coef[r*ny+d]
			}
		}
	}
	dfs(0)
	return nil
}

func signature(ny int, assign []uint8) string {
	h := sha256.New()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(ny))
	h.Write(buf[:])
	h.Write(assign)
	return hex.EncodeToString(h.Sum(nil))
}

// NewAdmissible builds a set from explicit assignments (e.g. a policy file's stored Y_pb), checking
// that they are binary, of the right width and in the canonical lexicographic order without repeats.
func NewAdmissible(ny int, assign []uint8) (*Admissible, error) {
	if ny <= 0 || len(assign)%ny != 0 {
		return nil, fmt.Errorf("admissible set: %d values do not form rows of %d binaries", len(assign), ny)
	}
	for i, v := range assign {
		if v > 1 {
			return nil, fmt.Errorf("admissible set: value %d at position %d is not binary", v, i)
		}
	}
	a := &Admissible{NY: ny, Assign: append([]uint8(nil), assign...)}
	for j := 1; j < a.Count(); j++ {
		if lexLess(a.At(j), a.At(j-1)) || string(a.At(j)) == string(a.At(j-1)) {
			return nil, fmt.Errorf("admissible set: assignment %d is out of order or repeated", j)
		}
	}
	a.Signature = signature(ny, a.Assign)
	return a, nil
}

func lexLess(x, y []uint8) bool {
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}
