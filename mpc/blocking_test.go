package mpc

import (
	"slices"
	"testing"
)

func TestShiftPattern(t *testing.T) {
	bl := Blocking{Steps: 16, Blocks: 4}
	// Two units: unit 0 runs blocks 1,2 (0-based 0,1); unit 1 runs block 3 only.
	y := []float64{1, 1, 0, 0, 0, 0, 1, 0}
	cases := []struct {
		k    int
		want []float64
	}{
		{0, y},
		{1, y}, {3, y}, // new blocks start inside the same old blocks
		{4, []float64{1, 0, 0, 0, 0, 1, 0, 0}},  // one block on, last repeated
		{7, []float64{1, 0, 0, 0, 0, 1, 0, 0}},  // still one block
		{8, []float64{0, 0, 0, 0, 1, 0, 0, 0}},  // two blocks
		{15, []float64{0, 0, 0, 0, 0, 0, 0, 0}}, // everything is the last block
	}
	for _, c := range cases {
		if got := bl.ShiftPattern(y, c.k); !slices.Equal(got, c.want) {
			t.Errorf("k=%d: %v, want %v", c.k, got, c.want)
		}
	}
}

func TestShiftSteps(t *testing.T) {
	v := []float64{1, 2, 3, 4}
	if got := ShiftSteps(v, 1); !slices.Equal(got, []float64{2, 3, 4, 4}) {
		t.Errorf("shift 1: %v", got)
	}
	if got := ShiftSteps(v, 6); !slices.Equal(got, []float64{4, 4, 4, 4}) {
		t.Errorf("shift 6: %v", got)
	}
	if got := ShiftSteps[float64](nil, 1); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
}

func TestExpand(t *testing.T) {
	bl := Blocking{Steps: 4, Blocks: 2}
	got := bl.Expand([]float64{1, 0, 0, 1})
	want := [][]float64{{1, 1, 0, 0}, {0, 0, 1, 1}}
	for u := range want {
		if !slices.Equal(got[u], want[u]) {
			t.Errorf("unit %d: %v, want %v", u, got[u], want[u])
		}
	}
	if err := (Blocking{Steps: 5, Blocks: 2}).Validate(); err == nil {
		t.Error("5 steps in 2 blocks accepted")
	}
}

func TestHandOvers(t *testing.T) {
	bl := Blocking{Steps: 6, Blocks: 3}
	// unit 0 runs in blocks 0 and 1, unit 1 in block 2, unit 2 never.
	y := []float64{1, 1, 0, 0, 0, 1, 0, 0, 0}
	got := bl.HandOvers(y, nil)
	want := [][]float64{
		{0, 0, 0, 1, 1, 1, 0, 0, 0}, // 0 → 1
		{0, 0, 0, 0, 0, 1, 1, 1, 0}, // 0 → 2
		{1, 1, 1, 0, 0, 0, 0, 0, 0}, // 1 → 0
		{1, 1, 0, 0, 0, 0, 0, 0, 1}, // 1 → 2
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k := range want {
		if !slices.Equal(got[k], want[k]) {
			t.Errorf("hand-over %d: %v, want %v", k, got[k], want[k])
		}
	}
	if only := bl.HandOvers(y, func(p, q int) bool { return p == 1 && q == 2 }); len(only) != 1 || !slices.Equal(only[0], want[3]) {
		t.Errorf("restricted to 1 → 2: %v", only)
	}
	if y[0] != 1 || y[5] != 1 {
		t.Error("HandOvers changed its argument")
	}
}
