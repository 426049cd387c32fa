// Package fault injects faults for tests: an NLP back-end and a master back-end that fail on
// demand, run slow on a fake clock, or record the time limits the engine gives them, and a policy
// that runs slow. It imports no
// plant or controller package, so the tests inside gbd and mpc can use it too.
package fault

import (
	"math"
	"slices"
	"sync"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipopt"
	"gbdmpc/internal/fakeclock"
)

// Calls picks solves by their number, counted from 1.
type Calls func(call int) bool

// Only picks the k-th solve.
func Only(k int) Calls { return func(call int) bool { return call == k } }

// From picks the k-th solve and every later one.
func From(k int) Calls { return func(call int) bool { return call >= k } }

// NLP is an NLP back-end that passes every solve to Ipopt but those it fails: every solve while it
// is armed, and the solves Fail picks. A failed solve returns Err when it is set, else Status (with
// x0 as its point). With a Clock it records when each solve started and the time limit the
// engine's stop hook set for it, found by walking the stopped clock forward in 1 ms ticks until
// the hook fires and then putting it back (0 for a solve without a hook, the largest Duration for a
// hook that did not fire within an hour). It is safe for use by several goroutines.
type NLP struct {
	Err    error
	Status nlp.Status
	Fail   Calls
	Clock  *fakeclock.Clock

	mu     sync.Mutex
	armed  bool
	calls  int
	failed int
	starts []time.Time
	limits []time.Duration
}

// Arm turns the fault on or off.
func (f *NLP) Arm(on bool) { f.mu.Lock(); f.armed = on; f.mu.Unlock() }

// Calls is how many solves were asked for since the last Reset, failed or not.
func (f *NLP) Calls() int { f.mu.Lock(); defer f.mu.Unlock(); return f.calls }

// Failed is how many of them failed.
func (f *NLP) Failed() int { f.mu.Lock(); defer f.mu.Unlock(); return f.failed }

// Reset numbers the solves from 1 again and forgets their starts and limits.
func (f *NLP) Reset() {
	f.mu.Lock()
	f.calls, f.failed, f.starts, f.limits = 0, 0, nil, nil
	f.mu.Unlock()
}

// Starts and Limits are, with a Clock, each solve's start and time limit since the last Reset.
func (f *NLP) Starts() []time.Time { f.mu.Lock(); defer f.mu.Unlock(); return slices.Clone(f.starts) }

// Limits: see Starts.
func (f *NLP) Limits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.limits)
}

// probe finds the limit opt's stop hook sets, leaving the clock where it was.
func probe(c *fakeclock.Clock, opt nlp.Options) time.Duration {
	if opt.Stop == nil {
		return 0
	}
	start := c.Now()
	defer c.Set(start)
	for !opt.Stop() {
		if c.Now().Sub(start) >= time.Hour {
			return time.Duration(math.MaxInt64)
		}
		c.Advance(time.Millisecond)
	}
	return c.Now().Sub(start)
}

// Solve implements nlp.Solver.
func (f *NLP) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	f.mu.Lock()
	f.calls++
	if f.Clock != nil {
		f.starts = append(f.starts, f.Clock.Now())
		f.limits = append(f.limits, probe(f.Clock, opt))
	}
	fail := f.armed || (f.Fail != nil && f.Fail(f.calls))
	if fail {
		f.failed++
	}
	f.mu.Unlock()
	switch {
	case !fail:
		return ipopt.Solver{}.Solve(p, x0, opt)
	case f.Err != nil:
		return nlp.Result{}, f.Err
	}
	return nlp.Result{Status: f.Status, X: slices.Clone(x0)}, nil
}

// Master is the exact master, enum.Master, with faults. Every solve records its time
// limit and, with a Clock, the time it started; with a Cost it then moves the Clock by Cost, as a
// MIP solver that does not honour its limit would. The solves Fail picks return Err when it is set,
// else no incumbent with the valid bound the inner solve proved (a MIP solver stopped early). For
// one goroutine.
type Master struct {
	enum.Master
	Fail  Calls
	Err   error
	Clock *fakeclock.Clock
	Cost  time.Duration

	// Limits and Starts are each solve's time limit and, with a Clock, its start.
	Limits []time.Duration
	Starts []time.Time
}

// Calls is how many solves were asked for.
func (m *Master) Calls() int { return len(m.Limits) }

// Solve implements gbd.Master.
func (m *Master) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	m.Limits = append(m.Limits, limit)
	if m.Clock != nil {
		m.Starts = append(m.Starts, m.Clock.Now())
		m.Clock.Advance(m.Cost)
	}
	r, err := m.Master.Solve(limit, start)
	if m.Fail == nil || !m.Fail(len(m.Limits)) {
		return r, err
	}
	if m.Err != nil {
		return gbd.MasterResult{}, m.Err
	}
	return gbd.MasterResult{Status: gbd.MasterNoIncumbent, Mu: math.Inf(1), Bound: math.Min(r.Bound, r.Mu)}, nil
}

// Policy is a slow agent: every proposal moves Clock by Cost, as a policy that cannot be stopped
// would, and proposes the first assignment of Y_pb. For one goroutine.
type Policy struct {
	Clock *fakeclock.Clock
	Cost  time.Duration
	Calls int // proposals asked for
}

// Propose implements gbd.Policy.
func (p *Policy) Propose(v *gbd.MasterView) (gbd.Proposal, error) {
	p.Calls++
	p.Clock.Advance(p.Cost)
	l := make([]float64, v.Ypb.Count())
	l[0] = 1
	return gbd.Proposal{Logits: l}, nil
}
