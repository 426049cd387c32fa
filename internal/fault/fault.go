// Package fault injects faults for tests: an NLP back-end that fails on demand. It imports no
// plant or controller package, so the tests inside mpc can use it too.
package fault

import (
	"slices"
	"sync"

	"gbdmpc/gbd/ipopt"
	"gbdmpc/gbd/nlp"
)

// NLP is an NLP back-end that passes every solve to Ipopt until it is armed; armed, every
// solve fails: with Err when it is set, else with Status (and x0 as its point). It is safe for
// use by several goroutines.
type NLP struct {
	Err    error
	Status nlp.Status

	mu    sync.Mutex
	armed bool
	calls int
}

// Arm turns the fault on or off.
func (f *NLP) Arm(on bool) { f.mu.Lock(); f.armed = on; f.mu.Unlock() }

// Calls is how many solves were asked for, armed or not.
func (f *NLP) Calls() int { f.mu.Lock(); defer f.mu.Unlock(); return f.calls }

// Solve implements nlp.Solver.
func (f *NLP) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	f.mu.Lock()
	armed := f.armed
	f.calls++
	f.mu.Unlock()
	switch {
	case !armed:
		return ipopt.Solver{}.Solve(p, x0, opt)
	case f.Err != nil:
		return nlp.Result{}, f.Err
	}
	return nlp.Result{Status: f.Status, X: slices.Clone(x0)}, nil
}
