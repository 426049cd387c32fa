package model

import (
	"strings"
	"testing"
)

const rulesModel = `
name: rules
dt: 1
horizon: 10
blocks: 5
states:
  - {name: x, range: [0, 10], next: {x: 1, a: 1, b: 1, c: -1}}
inputs:
  - {name: a, range: [0, 1], unit: ua, on_min: 0.5}
  - {name: b, range: [0, 1], unit: ub}
  - {name: c, range: [0, 1], unit: uc}
units:
  - {name: ua, min_up: 3}
  - {name: ub, min_down: 2, must_run: MUST}
  - {name: uc}
rules:
  - {at_most: 2, units: [ua, ub, uc]}
  - {exclusive: [ua, uc]}
`

// The model's rules, written directly for 3 units × 5 blocks: at most two on, ua and uc never
// together, ub always on (must_run), ua on for 3 blocks once started at b ≥ 1, ub off for 2 blocks
// once stopped at b ≥ 1.
func rulesHold(y []float64, nb int, mustRun bool) bool {
	on := func(u, b int) bool { return y[u*nb+b] > 0.5 }
	for b := range nb {
		n := 0
		for u := range 3 {
			if on(u, b) {
				n++
			}
		}
		if n > 2 || on(0, b) && on(2, b) || mustRun && !on(1, b) {
			return false
		}
	}
	for b := 1; b < nb; b++ {
		if on(0, b) && !on(0, b-1) {
			for j := 1; j < 3 && b+j < nb; j++ {
				if !on(0, b+j) {
					return false
				}
			}
		}
		if !on(1, b) && on(1, b-1) {
			if b+1 < nb && on(1, b+1) {
				return false
			}
		}
	}
	return true
}

func TestRulesMatchBruteForce(t *testing.T) {
	for _, must := range []bool{false, true} {
		src := strings.Replace(rulesModel, "MUST", map[bool]string{false: "false", true: "true"}[must], 1)
		m, err := Parse("rules.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		fam, err := NewFamily(m)
		if err != nil {
			t.Fatal(err)
		}
		ypb := fam.Admissible()
		if ypb.Stages != nil {
			t.Error("min_up 3 spans four blocks: Y_pb must not claim to be staged")
		}
		y := make([]float64, ypb.NY)
		count := 0
		for mask := range 1 << ypb.NY {
			for i := range y {
				y[i] = float64(mask >> i & 1)
			}
			want := rulesHold(y, m.Blocks, must)
			if want {
				count++
			}
			if ypb.Contains(y) != want {
				t.Fatalf("must_run %v, y=%v: admissible %v, rules say %v", must, y, ypb.Contains(y), want)
			}
		}
		if count != ypb.Count() || count == 0 {
			t.Errorf("must_run %v: rules allow %d plans, Y_pb has %d", must, count, ypb.Count())
		}
	}
}
