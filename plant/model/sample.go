package model

import "math/rand/v2"

// Sample draws an instance for datagen and bench: every state uniform within its hard limits (its
// range where it has none), every unit on or off with equal chance, every forecast value uniform
// in its typical range. A model says nothing about the shape of its forecasts, so these are
// independent draws, not a plant's days.
func (m *Model) Sample(rng *rand.Rand) Instance {
	in := Instance{States: make([]float64, len(m.States)), On: make([]int, len(m.Units)),
		Forecasts: make([][]float64, len(m.Forecasts))}
	for i, s := range m.States {
		lo, hi := s.Lo, s.Hi
		if s.HasMin {
			lo = max(lo, s.Min)
		}
		if s.HasMax {
			hi = min(hi, s.Max)
		}
		in.States[i] = lo + rng.Float64()*(hi-lo)
	}
	for u := range m.Units {
		in.On[u] = rng.IntN(2)
	}
	for i, f := range m.Forecasts {
		v := make([]float64, m.Horizon)
		for t := range v {
			v[t] = f.TypLo + rng.Float64()*(f.TypHi-f.TypLo)
		}
		in.Forecasts[i] = v
	}
	return in
}
