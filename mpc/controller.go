package mpc

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
)

// DefaultSafeAfter is Options.SafeAfter's default: one block of the pump station's move blocking.
const DefaultSafeAfter = 4

// Options configure a Controller. Zero fields mean the documented defaults.
type Options struct {
	NewMaster func() gbd.Master // nil → &enum.Master{}
	Policy    gbd.Policy        // nil → classical GBD
	NLP       nlp.Solver        // owned by the Controller; nil → gbd.NewNLP(), made once
	Settings  gbd.Settings      // Eps, EpsTol, TMin, TMax, Budget, NLP options; Deadline is set per step
	Clock     gbd.Clock         // nil → gbd.RealClock
	Recorder  gbd.Recorder      // optional
	// SafeAfter is how many consecutive fallback periods may run on the shifted plan; the next one
	// applies the family's safe action (default DefaultSafeAfter).
	SafeAfter int
	// NoCarry turns off carrying cuts between control steps (doc.go, "Carried cuts"): every solve
	// then starts without cuts.
	NoCarry bool
	// CarryPool bounds the cuts kept for carrying (default gbd.EnumPoolSize with the enum master,
	// gbd.DefaultPoolSize with the others).
	CarryPool int
	// CarryWorkers bounds the goroutines re-evaluating carried cuts (default min(GOMAXPROCS, 4)).
	CarryWorkers int
	// CarryFrac is the fraction of the time left before a step's deadline that re-evaluating the
	// carried cuts may take (default DefaultCarryFrac); the solve gets the rest. Cuts not
	// re-evaluated by then are not carried (Decision.Carry.TimedOut). Must be in [0, 1].
	CarryFrac float64
	// CarryEvictIdle drops a pooled cut once its re-evaluations were dominated by other carried
	// cuts in this many consecutive steps (default DefaultCarryEvictIdle; −1 never drops one
	// before it is the oldest of a full pool). See gbd.CarryOptions.EvictIdle.
	CarryEvictIdle int
	// HardFrac is the share of the time left that the hard problem gets, when the family has a soft
	// version and the pre-check is inconclusive, at a step that follows one whose hard limits could
	// not be held or whose hard solve found no plan (default DefaultHardFrac); the soft problem gets
	// the rest if the hard one proves infeasible or finds nothing. Other steps give the hard problem
	// the whole time (doc.go, "When the limits cannot be held"). Must be in [0, 1].
	HardFrac float64
	// Alternates evaluates the measurement's alternates of the warm start (Alternator) before the
	// first master. Off by default: with strengthened and carried cuts the master reaches the
	// incumbent they would give in fewer iterations than they cost. `simulate --steps 96`, without
	// against with: 12 binaries 2.5 against 5.0 iterations and 1.7–1.9 against 3.5–3.7 ms a step;
	// 24 binaries 7.4 against 11.4 iterations; 40 binaries at a 0.8 s deadline 9.1–9.2 against
	// 15.1–15.2 iterations and 92–93 against 91–92 steps certified; at 60 binaries and 2 s, where no
	// step certifies either way, 24 steps cost 12.65 and 11.73 € without, 9.31 and 13.50 € with.
	Alternates bool
	// Siblings, if set, lends this controller a sibling plant's carried cuts while it has none of
	// its own (its first step), and receives its pool for the others. One Siblings serves all the
	// controllers of a daemon.
	Siblings *Siblings
}

// DefaultCarryFrac is Options.CarryFrac's default: re-evaluating the pool is a small share of a
// step (plant/pumpstation's BenchmarkCarry), so at a 50 ms deadline the limit bites only when the
// machine is loaded or the step starts late.
const DefaultCarryFrac = 0.25

// DefaultCarryEvictIdle is Options.CarryEvictIdle's default: an entry dominated at two steps in a
// row is dropped. Once the NLP takes tens of microseconds, re-evaluating a full pool costs more
// than the few GBD iterations its idle cuts save (compare simulate with and without eviction).
const DefaultCarryEvictIdle = 2

// Controller is the receding-horizon controller of one plant: each Step solves the measurement's
// MINLP from the previous plan shifted, and publishes the first move or the documented fallback.
// It keeps the plan between steps, so it is not safe for concurrent use.
type Controller struct {
	fam       Family
	ypb       *gbd.Admissible
	opt       Options
	master    gbd.Master
	policy    gbd.Policy
	plan      Plan // the plan whose first move was published last (nil: none)
	fallbacks int  // consecutive fallback periods
	// pools keep the multipliers of earlier steps' cuts, one pool per problem kind (nil with
	// NoCarry): a cut of the hard problem is not one of the soft problem, nor the reverse.
	pools [2]*gbd.CutPool
	step  int // control periods so far: the clock of the pools' shifts
	// hinged says, per problem kind, whether the last solve's cuts carried the problem's hinges
	// (gbd.Result.Hinges), known once one was solved: the carried cuts are made the same way.
	hinged, hingeKnown [2]bool
	// doubt is set after a step whose hard limits could not be held or whose hard solve found no
	// plan: the next hard solve gets only HardFrac of the time, so the soft one has the rest.
	doubt bool
	// proposal is what the policy's proposals are known to take, handed from solve to solve
	// (gbd.Settings.Proposal) so that a policy too slow for the time left is not asked. It does
	// not wear off with time: every retry of a policy that is too slow costs a period's action. A
	// policy is asked again only when the master has over four times the cuts it was measured with
	// (gbd.ProposalCost.Expected), or once replaced (SetPolicy); gbdmpc_agent_benched_total
	// counts the steps without it.
	proposal gbd.ProposalCost
}

// NewController checks the family and options and returns a controller without a plan.
func NewController(f Family, o Options) (*Controller, error) {
	if f == nil {
		return nil, errors.New("mpc: nil family")
	}
	ypb := f.Admissible()
	if ypb == nil || ypb.Empty() {
		return nil, fmt.Errorf("mpc: family %q has an empty admissible set", f.Name())
	}
	if o.SafeAfter < 0 {
		return nil, fmt.Errorf("mpc: SafeAfter must be ≥ 0, got %d", o.SafeAfter)
	}
	if o.SafeAfter == 0 {
		o.SafeAfter = DefaultSafeAfter
	}
	if o.CarryPool < 0 || o.CarryWorkers < 0 {
		return nil, fmt.Errorf("mpc: CarryPool and CarryWorkers must be ≥ 0, got %d and %d", o.CarryPool, o.CarryWorkers)
	}
	if !(o.CarryFrac >= 0 && o.CarryFrac <= 1) {
		return nil, fmt.Errorf("mpc: CarryFrac must be in [0, 1], got %v", o.CarryFrac)
	}
	if o.CarryFrac == 0 {
		o.CarryFrac = DefaultCarryFrac
	}
	if o.CarryEvictIdle < -1 {
		return nil, fmt.Errorf("mpc: CarryEvictIdle must be ≥ −1, got %d", o.CarryEvictIdle)
	}
	if o.CarryEvictIdle == 0 {
		o.CarryEvictIdle = DefaultCarryEvictIdle
	}
	if !(o.HardFrac >= 0 && o.HardFrac <= 1) {
		return nil, fmt.Errorf("mpc: HardFrac must be in [0, 1], got %v", o.HardFrac)
	}
	if o.HardFrac == 0 {
		o.HardFrac = DefaultHardFrac
	}
	if o.Clock == nil {
		o.Clock = gbd.RealClock
	}
	master := gbd.Master(&enum.Master{})
	if o.NewMaster != nil {
		if master = o.NewMaster(); master == nil {
			return nil, errors.New("mpc: Options.NewMaster returned nil")
		}
	}
	if err := gbd.MasterFits(ypb, master); err != nil {
		return nil, fmt.Errorf("mpc: family %q: %w", f.Name(), err)
	}
	if o.NLP == nil {
		// One back-end for the controller's life: a native back-end keeps its workspace and
		// symbolic analysis from step to step.
		o.NLP = gbd.NewNLP()
	}
	if _, enum := master.(*enum.Master); enum && o.CarryPool == 0 {
		o.CarryPool = gbd.EnumPoolSize
	}
	c := &Controller{fam: f, ypb: ypb, opt: o, master: master, policy: o.Policy}
	if !o.NoCarry {
		c.pools = [2]*gbd.CutPool{gbd.NewCutPool(o.CarryPool), gbd.NewCutPool(o.CarryPool)}
	}
	return c, nil
}

// SetPolicy replaces the agent (nil: classical GBD) and forgets how long the old one's proposals
// took. It takes effect at the next Step and, like Step, must not be called concurrently with it.
func (c *Controller) SetPolicy(p gbd.Policy) { c.policy, c.proposal = p, gbd.ProposalCost{} }

// Family is the controller's plant family.
func (c *Controller) Family() Family { return c.fam }

// Plan is the plan whose first move was published last (nil before the first step or after the
// safe action).
func (c *Controller) Plan() Plan { return c.plan }

// Adopt makes p the plan whose first move was published last, as if this controller had published
// it after fallbacks consecutive fallback periods: the next Step warm-starts from it shifted, and
// falls back on it shifted while the SafeAfter allowance lasts. A daemon taking over from another
// one adopts that one's last plan and fallback count, so the allowance is not granted twice.
func (c *Controller) Adopt(p Plan, fallbacks int) {
	c.plan, c.fallbacks = p, max(0, fallbacks)
}

// Step runs one control period for m: it always returns a usable Decision, a fallback when the
// solve could not produce an incumbent. The error is non-nil only when m is nil. When the family has
// a soft version (Softener) and the hard limits cannot be held, the decision is the soft problem's
// optimum marked Relaxed (doc.go, "When the limits cannot be held").
func (c *Controller) Step(m Measurement, deadline time.Time) (Decision, error) {
	if m == nil {
		return Decision{}, errors.New("mpc: nil measurement")
	}
	start := c.opt.Clock.Now()
	defer func() { c.step++ }()
	var shifted Plan
	if c.plan != nil {
		if next, ok := c.plan.Shift(); ok {
			shifted = next
		}
	}
	var carry gbd.CarryStats
	solve := func(kind ProblemKind, p *gbd.Problem, set gbd.Settings) (*gbd.Result, error) {
		set.Y0, set.X0 = StartPoint(c.ypb, p, m, shifted, kind)
		if a, ok := m.(Alternator); ok && set.Y0 != nil && c.opt.Alternates {
			set.Starts = a.Alternates(set.Y0)
		}
		carry = addCarry(carry, c.carry(kind, p, &set))
		if kr, ok := c.opt.Recorder.(KindRecorder); ok {
			kr.SolvingKind(kind)
		}
		r, err := c.solve(p, set)
		c.remember(kind, p, r)
		return r, err
	}
	set := c.opt.Settings
	set.Deadline = deadline
	frac := 1.0
	if c.doubt {
		frac = c.opt.HardFrac
	}
	out, err := Solve(m, set, frac, c.opt.Clock, solve)
	c.doubt = out != nil && (out.Infeasible != "" || out.Hard != nil && out.Hard.Y == nil)
	if err != nil {
		var r *gbd.Result
		if out != nil {
			r = out.Result
		}
		d := c.fallback(m, shifted, deadline, start, r, err.Error())
		d.Carry = carry
		if out != nil {
			d.Hard, d.Soft = out.Hard, out.Soft
		}
		return d, nil
	}
	r := out.Result
	// A solver that fails after the solve found an incumbent leaves a feasible point and a valid
	// lower bound: the plant gets that incumbent, as a gap result, rather than a fallback.
	failedWithIncumbent := r != nil && r.Status == gbd.StatusFailed && r.Y != nil && r.X != nil
	if r == nil || (r.Status != gbd.StatusOptimal && r.Status != gbd.StatusGap && !failedWithIncumbent) || r.Y == nil {
		reason := "no result"
		if r != nil {
			reason = "solve ended " + r.Status.String()
			if r.Message != "" {
				reason += ": " + r.Message
			}
		}
		if out.Note != "" {
			reason += "; " + out.Note
		}
		d := c.fallback(m, shifted, deadline, start, r, reason)
		d.Carry, d.Hard, d.Soft = carry, out.Hard, out.Soft
		return d, nil
	}
	plan, err := c.fam.PlanFrom(m, r)
	if err != nil {
		d := c.fallback(m, shifted, deadline, start, r, "plan: "+err.Error())
		d.Carry, d.Hard, d.Soft = carry, out.Hard, out.Soft
		return d, nil
	}
	c.plan, c.fallbacks = plan, 0
	status := StatusOptimal
	var reason string
	if r.Status == gbd.StatusGap {
		status = StatusGap
	}
	if failedWithIncumbent {
		status, reason = StatusGap, "solver failed after an incumbent was found; publishing the incumbent: "+r.Message
	}
	switch {
	case out.Relaxed != nil:
		reason = joinReason("hard limits cannot be held: "+out.Relaxed.Shortfall, reason)
	case out.Kind == Soft:
		reason = joinReason("no plan from the hard problem in its share of the time; the soft problem's optimum holds the limits", reason)
	}
	return Decision{
		Status: status, Apply: plan.Apply(), Plan: plan.JSON(),
		Y: r.Y, Objective: r.Objective, LBD: r.LBD, UBD: r.UBD, Iterations: iterations(out), Reason: reason,
		SolveSeconds: c.opt.Clock.Now().Sub(start).Seconds(), Agent: agentStats(out), Result: r, Deadline: deadline,
		Carry: carry, Relaxed: out.Relaxed, Kind: out.Kind, Hard: out.Hard, Soft: out.Soft,
	}, nil
}

func joinReason(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// iterations counts the GBD iterations of both solves of a step.
func iterations(out *Outcome) int {
	n := 0
	for _, r := range []*gbd.Result{out.Hard, out.Soft} {
		if r != nil {
			n += r.Iterations
		}
	}
	return n
}

// agentStats adds up what the agent did in both solves of a step.
func agentStats(out *Outcome) gbd.AgentStats {
	var s gbd.AgentStats
	for _, r := range []*gbd.Result{out.Hard, out.Soft} {
		if r != nil {
			s.Add(r.Agent)
		}
	}
	return s
}

// solve runs the engine. A panic inside it (a bug in a policy, a back-end or the engine) becomes an
// error, so that the plant still gets the fallback rather than a dead controller.
func (c *Controller) solve(p *gbd.Problem, set gbd.Settings) (r *gbd.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			r, err = nil, fmt.Errorf("panic: %v", v)
		}
	}()
	set.Proposal = c.proposal
	eng := gbd.Engine{NLP: c.opt.NLP, Master: c.master, Policy: c.policy, Clock: c.opt.Clock, Recorder: c.opt.Recorder}
	r, err = eng.Solve(p, c.ypb, set)
	if r != nil {
		c.proposal = r.Proposal
	}
	return r, err
}

// StartPoint is the first iterate of a solve of problem p (of kind kind) for measurement m: the
// shifted plan's guess when its binaries are in ypb (the engine requires it; shifted may be nil),
// else the measurement's own guess (Starter), else nil for the engine's default. Guesses are in
// the hard problem's layout; for the soft problem the Softener lifts them. The controller starts
// every step from it, and `gbdmpc solve` a solve without a plan, as a daemon's first step.
func StartPoint(ypb *gbd.Admissible, p *gbd.Problem, m Measurement, shifted Plan, kind ProblemKind) (y, x []float64) {
	type guess struct{ y, x []float64 }
	var guesses []guess
	if shifted != nil {
		gy, gx := shifted.Start()
		guesses = append(guesses, guess{gy, gx})
	}
	if s, ok := m.(Starter); ok {
		gy, gx := s.Start()
		guesses = append(guesses, guess{gy, gx})
	}
	sf, _ := m.(Softener)
	for _, g := range guesses {
		gx := g.x
		if kind == Soft && sf != nil && gx != nil {
			gx = sf.SoftStart(gx)
		}
		if x == nil && len(gx) == p.NX {
			x = gx
		}
		if y == nil && len(g.y) == p.NY && ypb.Contains(g.y) {
			y = g.y
		}
	}
	return y, x
}

// fallback publishes the shifted previous plan for up to SafeAfter consecutive periods, then the
// family's safe action (for m, when the family's safe action depends on the measurement).
func (c *Controller) fallback(m Measurement, shifted Plan, deadline, start time.Time, r *gbd.Result, reason string) Decision {
	c.fallbacks++
	d := Decision{Status: StatusFallback, Reason: reason, Result: r, Deadline: deadline, Fallbacks: c.fallbacks,
		Objective: math.Inf(1), LBD: math.Inf(-1), UBD: math.Inf(1)}
	if r != nil {
		d.LBD, d.UBD, d.Iterations, d.Agent = r.LBD, r.UBD, r.Iterations, r.Agent
	}
	if shifted != nil && c.fallbacks <= c.opt.SafeAfter {
		c.plan = shifted
		d.Apply, d.Plan = shifted.Apply(), shifted.JSON()
		d.Y, _ = shifted.Start()
	} else {
		c.plan = nil
		d.Safe = true
		d.Apply, d.Plan = c.fam.SafeAction(), nil
		if sa, ok := c.fam.(SafeActioner); ok {
			d.Apply = sa.SafeActionFor(m)
		}
		if shifted == nil && c.fallbacks <= c.opt.SafeAfter {
			d.Reason += "; no previous plan to shift"
		}
	}
	d.SolveSeconds = c.opt.Clock.Now().Sub(start).Seconds()
	return d
}
