package mpc

import "math"

// HoldUnit is what one on/off unit adds to a held quantity while it runs: Lo with its inputs at the
// least of their running range, Hi at the most (Hi < Lo when its inputs lower the quantity).
type HoldUnit struct{ Lo, Hi float64 }

// MaxHoldUnits bounds the units HoldSet chooses among (it tries every subset).
const MaxHoldUnits = 16

// HoldSet is the rule behind a measurement-dependent safe action (SafeActioner): which units to run
// so that a quantity the measurement fixes (the pump station's inflow, a model's state at the end
// of the step) comes as close as it can to want, and at what common fraction alpha ∈ [0, 1] of
// their ranges. Of the sets that may runs (nil: every set), it takes the one whose range
// [Σ Lo, Σ Hi] comes closest to want, the fewest units on a tie (within 1e-9), then the first in
// binary order (unit u is bit u); each running unit then runs at Lo + alpha·(Hi − Lo), the total
// meeting want clamped to the set's range. ok is false when no set may run, or for more than 16
// units.
func HoldSet(want float64, units []HoldUnit, may func(on []bool) bool) (on []bool, alpha float64, ok bool) {
	n := len(units)
	if n > MaxHoldUnits {
		return nil, 0, false
	}
	on = make([]bool, n)
	best, bestMiss, bestN := -1, math.Inf(1), n+1
	for set := 0; set < 1<<n; set++ {
		k, lo, hi := 0, 0.0, 0.0
		for u := range n {
			on[u] = set&(1<<u) != 0
			if on[u] {
				k++
				lo, hi = lo+units[u].Lo, hi+units[u].Hi
			}
		}
		if may != nil && !may(on) {
			continue
		}
		lo, hi = math.Min(lo, hi), math.Max(lo, hi)
		miss := math.Abs(math.Min(math.Max(want, lo), hi) - want)
		if miss < bestMiss-1e-9 || math.Abs(miss-bestMiss) <= 1e-9 && k < bestN {
			best, bestMiss, bestN = set, miss, k
		}
	}
	if best < 0 {
		return nil, 0, false
	}
	base, span := 0.0, 0.0
	for u := range n {
		on[u] = best&(1<<u) != 0
		if on[u] {
			base += units[u].Lo
			span += units[u].Hi - units[u].Lo
		}
	}
	switch {
	case span > 0:
		alpha = math.Min(math.Max(want-base, 0), span) / span
	case span < 0:
		alpha = math.Min(math.Max(want-base, span), 0) / span
	}
	return on, alpha, true
}
