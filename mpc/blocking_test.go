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
	if got := ShiftSteps(nil, 1); len(got) != 0 {
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
