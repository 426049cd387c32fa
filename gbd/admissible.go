package gbd

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
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
type Admissible struct {
	NY     int
	Assign []uint8 // Count()*NY values, row-major
	// Signature is a hex SHA-256 of NY and every assignment in order: two sets with the same signature
	// are the same action space.
	Signature string
}

// DefaultMaxAdmissible bounds the size of Y_pb that EnumerateAdmissible accepts when none is given.
const DefaultMaxAdmissible = 1 << 16

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
func (a *Admissible) Float(j int, dst []float64) []float64 {
	for i, v := range a.At(j) {
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
	if ny <= 0 {
		return nil, fmt.Errorf("enumerate admissible set: need at least one binary, got %d", ny)
	}
	if max <= 0 {
		max = DefaultMaxAdmissible
	}
	const tol = 1e-9
	nr := len(rows)
	// Dense coefficients per row, and for each row and depth the least the remaining binaries can add.
	coef := make([]float64, nr*ny)
	rest := make([]float64, nr*(ny+1))
	for r, row := range rows {
		if len(row.Idx) != len(row.Coef) {
			return nil, fmt.Errorf("pure binary row %d: %d indices but %d coefficients", r, len(row.Idx), len(row.Coef))
		}
		if math.IsNaN(row.RHS) || math.IsInf(row.RHS, 0) {
			return nil, fmt.Errorf("pure binary row %d: right-hand side %v is not finite", r, row.RHS)
		}
		for k, i := range row.Idx {
			if i < 0 || i >= ny {
				return nil, fmt.Errorf("pure binary row %d: index %d out of range [0,%d)", r, i, ny)
			}
			if c := row.Coef[k]; math.IsNaN(c) || math.IsInf(c, 0) {
				return nil, fmt.Errorf("pure binary row %d: coefficient %v is not finite", r, c)
			}
			coef[r*ny+i] += row.Coef[k]
		}
		for d := ny - 1; d >= 0; d-- {
			rest[r*(ny+1)+d] = rest[r*(ny+1)+d+1] + math.Min(0, coef[r*ny+d])
		}
	}
	a := &Admissible{NY: ny}
	y := make([]uint8, ny)
	lhs := make([]float64, nr)
	var tooMany bool
	var dfs func(d int)
	dfs = func(d int) {
		if tooMany {
			return
		}
		if d == ny {
			if a.Count() >= max {
				tooMany = true
				return
			}
			a.Assign = append(a.Assign, y...)
			return
		}
		for v := uint8(0); v <= 1; v++ {
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
	if tooMany {
		return nil, fmt.Errorf("enumerate admissible set: more than %d assignments of %d binaries: %w", max, ny, ErrTooManyAssignments)
	}
	a.Signature = signature(ny, a.Assign)
	return a, nil
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
