package mpc

import "fmt"

// Blocking is move blocking: a horizon of Steps steps whose binaries are held constant over Blocks
// equal blocks of Len() consecutive steps. Binary patterns are unit-major: unit u, block b at
// u·Blocks + b (the pump station's y[p,b] at p·B + b).
type Blocking struct {
	Steps, Blocks int
}

// Validate checks that the steps divide into the blocks.
func (bl Blocking) Validate() error {
	if bl.Steps < 1 || bl.Blocks < 1 || bl.Steps%bl.Blocks != 0 {
		return fmt.Errorf("mpc: %d steps do not divide into %d blocks", bl.Steps, bl.Blocks)
	}
	return nil
}

// Len is the number of steps per block.
func (bl Blocking) Len() int { return bl.Steps / bl.Blocks }

// Block is the block that step t (0-based) belongs to.
func (bl Blocking) Block(t int) int { return t / bl.Len() }

// Expand turns a block pattern into per-step values: out[u][t] = y[u·Blocks + Block(t)].
func (bl Blocking) Expand(y []float64) [][]float64 {
	units := len(y) / bl.Blocks
	out := make([][]float64, units)
	for u := range out {
		out[u] = make([]float64, bl.Steps)
		for t := range bl.Steps {
			out[u][t] = y[u*bl.Blocks+bl.Block(t)]
		}
	}
	return out
}

// ShiftPattern is the block pattern of a plan seen k steps later (the move-blocking shift rule of
// doc.go): block b of the new horizon takes the value the old plan had at the new block's first
// step, old step b·Len() + k, and blocks that start past the old horizon repeat its last block. So
// the pattern is unchanged for k = 1..Len()−1 and moves by one block every Len() steps.
func (bl Blocking) ShiftPattern(y []float64, k int) []float64 {
	units := len(y) / bl.Blocks
	out := make([]float64, len(y))
	for u := range units {
		for b := range bl.Blocks {
			src := min(bl.Block(b*bl.Len()+k), bl.Blocks-1)
			out[u*bl.Blocks+b] = y[u*bl.Blocks+src]
		}
	}
	return out
}

// ShiftSteps drops the first k steps of a per-step series (values, unit states) and repeats its
// last value k times.
func ShiftSteps[T any](v []T, k int) []T {
	out := make([]T, len(v))
	if len(v) == 0 {
		return out
	}
	for t := range v {
		out[t] = v[min(t+k, len(v)-1)]
	}
	return out
}

// Hold is the block pattern (unit-major) that keeps every unit in its measured state on[u] (0 or 1)
// over the whole horizon: the start of a solve that has no previous plan.
func (bl Blocking) Hold(on []int) []float64 {
	y := make([]float64, len(on)*bl.Blocks)
	for u, v := range on {
		for b := range bl.Blocks {
			y[u*bl.Blocks+b] = float64(v)
		}
	}
	return y
}

// HandOvers are the block patterns y (unit-major) with every running block of one unit handed to
// another unit that is off in those blocks, for each ordered pair (p, q) that may says may swap
// (nil: every pair): the plan that runs the same hours on another machine. Pairs where q already
// runs in one of p's blocks, or p runs in none, give nothing. At most U·(U−1) patterns.
func (bl Blocking) HandOvers(y []float64, may func(p, q int) bool) [][]float64 {
	units := len(y) / bl.Blocks
	var out [][]float64
	for p := range units {
		for q := range units {
			if p == q || may != nil && !may(p, q) {
				continue
			}
			alt := append([]float64(nil), y...)
			moved, ok := 0, true
			for b := range bl.Blocks {
				if y[p*bl.Blocks+b] < 0.5 {
					continue
				}
				if y[q*bl.Blocks+b] > 0.5 {
					ok = false // q already runs in that block: not a hand-over
					break
				}
				alt[p*bl.Blocks+b], alt[q*bl.Blocks+b] = 0, 1
				moved++
			}
			if ok && moved > 0 {
				out = append(out, alt)
			}
		}
	}
	return out
}
