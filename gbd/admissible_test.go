package gbd

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// bruteAdmissible filters all 2^ny assignments, the reference for the pruned search.
func bruteAdmissible(ny int, rows []PureRow) [][]uint8 {
	var out [][]uint8
	for mask := 0; mask < 1<<ny; mask++ {
		y := make([]uint8, ny)
		for i := range ny {
			y[i] = uint8(mask >> (ny - 1 - i) & 1) // y[0] most significant: lexicographic order
		}
		ok := true
		for _, r := range rows {
			s := 0.0
			for k, i := range r.Idx {
				s += r.Coef[k] * float64(y[i])
			}
			if s > r.RHS+1e-9 {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, y)
		}
	}
	return out
}

// randomRows draws n pure rows over ny binaries: each binary in a row with probability ½, integer
// coefficients in [−2, 2] and right-hand sides in [−1, 2].
func randomRows(rng *rand.Rand, ny, n int) []PureRow {
	var rows []PureRow
	for range n {
		var r PureRow
		for i := range ny {
			if rng.IntN(2) == 0 {
				r.Idx = append(r.Idx, i)
				r.Coef = append(r.Coef, float64(rng.IntN(5)-2))
			}
		}
		r.RHS = float64(rng.IntN(4) - 1)
		rows = append(rows, r)
	}
	return rows
}

func TestEnumerateAdmissibleMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 200 {
		ny := 1 + rng.IntN(12)
		rows := randomRows(rng, ny, rng.IntN(6))
		a, err := EnumerateAdmissible(ny, rows, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteAdmissible(ny, rows)
		if a.Count() != len(want) {
			t.Fatalf("trial %d: %d assignments, brute force %d", trial, a.Count(), len(want))
		}
		y := make([]float64, ny)
		for j, w := range want {
			if string(a.At(j)) != string(w) {
				t.Fatalf("trial %d: assignment %d = %v, want %v", trial, j, a.At(j), w)
			}
			for i, v := range w {
				y[i] = float64(v)
			}
			if a.Index(y) != j {
				t.Fatalf("trial %d: Index(%v) = %d, want %d", trial, y, a.Index(y), j)
			}
		}
		if b, err := NewAdmissible(ny, a.Assign); err != nil || b.Signature != a.Signature {
			t.Fatalf("trial %d: NewAdmissible round trip: %v", trial, err)
		}
	}
}

func TestEnumerateAdmissibleLimits(t *testing.T) {
	if _, err := EnumerateAdmissible(20, nil, 1000); !errors.Is(err, ErrTooManyAssignments) {
		t.Errorf("2^20 assignments with max 1000: err = %v", err)
	}
	a, err := EnumerateAdmissible(3, []PureRow{{Idx: []int{0, 1, 2}, Coef: []float64{1, 1, 1}, RHS: -1}}, 0)
	if err != nil || a.Count() != 0 {
		t.Errorf("infeasible rows: %d assignments, err %v", a.Count(), err)
	}
	if _, err := EnumerateAdmissible(2, []PureRow{{Idx: []int{5}, Coef: []float64{1}}}, 0); err == nil {
		t.Error("out-of-range index accepted")
	}
	if _, err := NewAdmissible(2, []uint8{1, 0, 0, 1}); err == nil {
		t.Error("out-of-order assignments accepted")
	}
	if a.Index([]float64{0, 0, 0}) != -1 {
		t.Error("Index of a non-member is not -1")
	}
}

// BenchmarkEnumerateAdmissible is the pump station's Y_pb shape: 12 binaries, at most two pumps per
// block, minimum up-time rows.
func BenchmarkEnumerateAdmissible(b *testing.B) {
	var rows []PureRow
	for blk := range 4 {
		rows = append(rows, PureRow{Idx: []int{blk, 4 + blk, 8 + blk}, Coef: []float64{1, 1, 1}, RHS: 2})
	}
	for p := range 3 {
		for blk := 1; blk <= 2; blk++ {
			rows = append(rows, PureRow{Idx: []int{p*4 + blk, p*4 + blk - 1, p*4 + blk + 1}, Coef: []float64{1, -1, -1}, RHS: 0})
		}
	}
	for b.Loop() {
		if _, err := EnumerateAdmissible(12, rows, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// An implicit set agrees with the enumerated one on membership and on the first assignment, and
// its signature tells different rows apart.
func TestImplicitAdmissibleMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for trial := range 200 {
		ny := 1 + rng.IntN(10)
		rows := randomRows(rng, ny, rng.IntN(5))
		enum, err := EnumerateAdmissible(ny, rows, 0)
		if err != nil {
			t.Fatal(err)
		}
		imp, err := ImplicitAdmissible(ny, rows)
		if err != nil {
			t.Fatal(err)
		}
		if !imp.Implicit() || enum.Implicit() || imp.Empty() || imp.Count() != 0 {
			t.Fatalf("trial %d: implicit=%v/%v empty=%v count=%d", trial, imp.Implicit(), enum.Implicit(), imp.Empty(), imp.Count())
		}
		y := make([]float64, ny)
		for mask := 0; mask < 1<<ny; mask++ {
			for i := range ny {
				y[i] = float64(mask >> i & 1)
			}
			if imp.Contains(y) != enum.Contains(y) {
				t.Fatalf("trial %d: %v contained %v implicitly, %v enumerated", trial, y, imp.Contains(y), enum.Contains(y))
			}
		}
		f1, f2 := make([]float64, ny), make([]float64, ny)
		ok1, ok2 := enum.First(f1), imp.First(f2)
		if ok1 != ok2 || (ok1 && slices.Compare(f1, f2) != 0) {
			t.Fatalf("trial %d: first %v %v (enumerated) vs %v %v (implicit)", trial, f1, ok1, f2, ok2)
		}
	}
	rows := []PureRow{{Idx: []int{0, 1}, Coef: []float64{1, 1}, RHS: 1}}
	a, _ := ImplicitAdmissible(2, rows)
	b, _ := ImplicitAdmissible(2, []PureRow{{Idx: []int{0, 1}, Coef: []float64{1, 1}, RHS: 2}})
	if a.Signature == b.Signature {
		t.Error("different rows, same signature")
	}
	if a.Contains([]float64{0.5, 0}) || a.Contains([]float64{1}) {
		t.Error("a fractional or short vector is not an assignment")
	}
	if _, err := ImplicitAdmissible(2, []PureRow{{Idx: []int{2}, Coef: []float64{1}}}); err == nil {
		t.Error("out-of-range index accepted")
	}
}

func TestAdmissibleOrImplicitFallsBack(t *testing.T) {
	rows := []PureRow{{Idx: []int{0, 1, 2, 3}, Coef: []float64{1, 1, 1, 1}, RHS: 2}}
	a, err := AdmissibleOrImplicit(4, rows, 0)
	if err != nil || a.Implicit() || a.Count() != 11 {
		t.Fatalf("small set: %v implicit=%v count=%d", err, a.Implicit(), a.Count())
	}
	a, err = AdmissibleOrImplicit(4, rows, 5)
	if err != nil || !a.Implicit() {
		t.Fatalf("capped set: %v, want implicit", err)
	}
}
