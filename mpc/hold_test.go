package mpc

import (
	"math"
	"slices"
	"testing"
)

func TestHoldSet(t *testing.T) {
	pumps := []HoldUnit{{20, 60}, {30, 90}, {50, 150}}
	atMostTwo := func(on []bool) bool {
		n := 0
		for _, r := range on {
			if r {
				n++
			}
		}
		return n <= 2
	}
	for _, tc := range []struct {
		name  string
		want  float64
		units []HoldUnit
		may   func([]bool) bool
		on    []bool
		alpha float64
	}{
		{"nothing needed", 0, pumps, nil, []bool{false, false, false}, 0},
		{"one pump fits, the first", 40, pumps, nil, []bool{true, false, false}, 0.5},
		{"fewest, then the first, on a tie", 55, pumps, nil, []bool{true, false, false}, 35.0 / 40},
		{"fewest on a tie", 80, pumps, nil, []bool{false, true, false}, 50.0 / 60},
		{"beyond all, clamped", 500, pumps, atMostTwo, []bool{false, true, true}, 1},
		{"every pump allowed", 290, pumps, nil, []bool{true, true, true}, 0.95},
		{"lowering units", -3, []HoldUnit{{0.9, 4.5}, {-1, -5}}, nil, []bool{false, true}, 0.5},
	} {
		on, alpha, ok := HoldSet(tc.want, tc.units, tc.may)
		if !ok || !slices.Equal(on, tc.on) || math.Abs(alpha-tc.alpha) > 1e-12 {
			t.Errorf("%s: on %v alpha %v ok %v, want %v %v", tc.name, on, alpha, ok, tc.on, tc.alpha)
		}
	}
	if _, _, ok := HoldSet(1, pumps, func([]bool) bool { return false }); ok {
		t.Error("no admissible set, but ok")
	}
	if _, _, ok := HoldSet(1, make([]HoldUnit, MaxHoldUnits+1), nil); ok {
		t.Error("more than MaxHoldUnits units, but ok")
	}
}
