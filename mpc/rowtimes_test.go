package mpc

import (
	"slices"
	"testing"

	"gbdmpc/gbd"
)

func TestHold(t *testing.T) {
	got := Blocking{Steps: 6, Blocks: 3}.Hold([]int{1, 0, 1})
	if want := []float64{1, 1, 1, 0, 0, 0, 1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("Hold: %v, want %v", got, want)
	}
}

// TestRowTimesShiftDuals: a step row takes the old row of step min(t+k, N−1), a block row that of
// block min(⌊(b·L+k)/L⌋, B−1), a row alone at its time keeps its own; k = 0 gives one alignment,
// k > 0 the stored multipliers as the second.
func TestRowTimesShiftDuals(t *testing.T) {
	bl := Blocking{Steps: 4, Blocks: 2}
	var ineq []RowTime
	for s := range 4 {
		ineq = append(ineq, RowTime{Group: 0, T: s}) // rows 0..3: a step rule
	}
	ineq = append(ineq, RowTime{Group: 1, T: 0, Block: true}, RowTime{Group: 1, T: 1, Block: true}) // 4, 5
	ineq = append(ineq, RowTime{Group: 2, T: 3})                                                    // 6: terminal
	eq := []RowTime{{T: 0}, {T: 1}, {T: 2}, {T: 3}}
	rt := NewRowTimes(bl, ineq, eq)
	d := gbd.CutDuals{Mu: []float64{10, 11, 12, 13, 20, 21, 30}, Lam: []float64{-1, -2, -3, -4}}
	for _, tc := range []struct {
		k       int
		mu, lam []float64
	}{
		{0, d.Mu, d.Lam},
		{1, []float64{11, 12, 13, 13, 20, 21, 30}, []float64{-2, -3, -4, -4}},
		{2, []float64{12, 13, 13, 13, 21, 21, 30}, []float64{-3, -4, -4, -4}},
		{9, []float64{13, 13, 13, 13, 21, 21, 30}, []float64{-4, -4, -4, -4}},
	} {
		got := rt.ShiftDuals(d, tc.k)
		if want := min(tc.k+1, 2); len(got) != want {
			t.Fatalf("k=%d: %d alignments, want %d", tc.k, len(got), want)
		}
		if !slices.Equal(got[0].Mu, tc.mu) || !slices.Equal(got[0].Lam, tc.lam) {
			t.Errorf("k=%d: aligned %v %v, want %v %v", tc.k, got[0].Mu, got[0].Lam, tc.mu, tc.lam)
		}
		if len(got) == 2 && (!slices.Equal(got[1].Mu, d.Mu) || !slices.Equal(got[1].Lam, d.Lam)) {
			t.Errorf("k=%d: the stored alignment changed", tc.k)
		}
	}
	if rt.ShiftDuals(gbd.CutDuals{Mu: d.Mu[1:], Lam: d.Lam}, 1) != nil || rt.ShiftDuals(d, -1) != nil {
		t.Error("duals of another layout, or k < 0, were shifted")
	}
}
