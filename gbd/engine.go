package gbd

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"gbdmpc/gbd/nlp"
	"gbdmpc/internal/enum"
)

// Status says how a GBD solve ended. It is a result, not an error: Go errors are kept for a
// solve that could not be run at all (bad input).
type Status int

const (
	StatusOptimal    Status = iota + 1 // UBD − LBD ≤ ε
	StatusGap                          // stopped (deadline or iteration cap) with an incumbent; certified gap UBD − LBD
	StatusInfeasible                   // the MINLP has no feasible point
	StatusNoSolution                   // stopped before any feasible point was found
	StatusFailed                       // a solver failed so that no valid cut could be made
)

var statusNames = [...]string{
	StatusOptimal:    "optimal",
	StatusGap:        "gap",
	StatusInfeasible: "infeasible",
	StatusNoSolution: "no_solution",
	StatusFailed:     "failed",
}

func (s Status) String() string { return enum.Name(statusNames[:], s, "Status") }

// Clock is the engine's only source of time.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// RealClock is the wall clock.
var RealClock Clock = realClock{}

// Budget turns the time left before a deadline into solver limits (see doc.go, "Deadline budgets").
// Zero fields mean the documented defaults.
type Budget struct {
	// Margin is kept back from the deadline for returning the result (default 1 ms).
	Margin time.Duration
	// MasterMinFrac and MasterMaxFrac cap T_min and T_max at these fractions of the remaining time
	// (defaults 0.1 and 0.5).
	MasterMinFrac, MasterMaxFrac float64
	// NLPFrac caps each NLP's CPU time at this fraction of the remaining time (default 1).
	NLPFrac float64
}

func (b Budget) withDefaults() Budget {
	if b.Margin <= 0 {
		b.Margin = time.Millisecond
	}
	if b.MasterMinFrac <= 0 {
		b.MasterMinFrac = 0.1
	}
	if b.MasterMaxFrac <= 0 {
		b.MasterMaxFrac = 0.5
	}
	if b.NLPFrac <= 0 {
		b.NLPFrac = 1
	}
	return b
}

// Settings of one solve. The zero value means the paper's defaults.
type Settings struct {
	Eps     float64 // ε, termination at UBD − LBD ≤ ε (default DefaultEps)
	EpsTol  float64 // ε_tol of Algorithm 2 (default DefaultEpsTol)
	MaxIter int     // iteration cap (default DefaultMaxIter)
	// TMin and TMax bound the time-limited master solve of Algorithm 2 (DefaultTMin, DefaultTMax).
	TMin, TMax time.Duration
	// Deadline, if not zero, is when the answer must be back; see Budget.
	Deadline time.Time
	Budget   Budget
	// Interrupt is asked wherever the solve looks at the time left; once it reports true the solve
	// takes its deadline as reached and ends with what it has (StatusGap with its incumbent; without
	// a Deadline its message says "interrupted"). The daemon cuts a solve short this way when a
	// newer measurement waits behind it, and the commands end a solve on a signal. An NLP in
	// progress is not interrupted by it; a master in progress is when it is Interruptible (the
	// product's CBC master).
	Interrupt func() bool
	// Y0 is the first assignment (default: the first of Y_pb). Must be admissible.
	Y0 []float64
	// X0 is the first NLP starting point (e.g. the shifted previous plan), len NX, optional.
	X0 []float64
	// Starts are more assignments to evaluate after Y0, in order, before the first master: plans
	// near the warm start that a plant knows are often better (mpc.Alternator). Each costs one
	// subproblem, may lower UBD and adds its cut, valid like any GBD cut; ones outside Y_pb or
	// already evaluated are skipped. Starts found early let the master's cutoff (Cutoff) do its
	// work from the first master on.
	Starts [][]float64
	// Cuts are valid cuts known before the solve (carried from an earlier control step).
	Cuts []Cut
	// ClassicalCuts makes the solve's own optimality cuts GBD's classical ones (the Lagrangian at
	// the subproblem's solution) instead of the strengthened ones (Lagrangian.Strengthened): for
	// measuring what the strengthening buys, not for production.
	ClassicalCuts bool
	// StageCuts makes the optimality cuts stage cuts (stagecut.go) when the master takes their
	// tables (StageTabled) and Y_pb is staged. Off by default: on the pump stations they save a
	// quarter of the iterations with 4-step blocks and almost none with 2-step ones, and their
	// stage NLPs cost more than the iterations they save (docs/performance.md).
	StageCuts bool
	// NoHinges keeps the problem's hinges (hinge.go) out of the strengthened and stage cuts even
	// when the master takes them: for measuring what they buy.
	NoHinges bool
	// Patience, when positive, is how many proposals in a row may fail to become the next iterate
	// (infeasible, undecided, replaced, repeated, an error) before the solve stops asking the
	// policy: its remaining master steps are classical GBD's, exact masters. A weak agent then
	// costs a few time-limited masters, not a solve of them. 0 (the default) asks at every master
	// step, as Algorithm 2 does.
	Patience int
	// Candidates, when above 1, lets a policy that decodes its own assignment over a staged Y_pb
	// (the structured agent, builtin:random) screen that many of its best-scored admissible
	// assignments and propose the one the optimality cuts value least (MasterView.Candidates,
	// gbd/master/staged's Decoder.Screened). 0 or 1: its best-scored one, as Algorithm 2 has it.
	Candidates int
	// Polish, over a Y_pb with stages, improves every proposal that passed the screen by
	// Polisher's block coordinate descent on the master's cuts before the time-limited master is
	// warm-started with it.
	Polish bool
	// Proposal is what the policy's proposals took in earlier solves (the caller carries
	// Result.Proposal, as it carries cuts); see ProposalCost.
	Proposal ProposalCost
	// NLP are the options of every subproblem solve (zero: the back-end contract's defaults, a
	// scaled KKT tolerance of 1e-9); the deadline adds its stop through NLP.Stop.
	NLP nlp.Options
}

// The defaults of Settings, which configs and the command-line flags take as theirs.
const (
	DefaultEps     = 1e-3                   // ε
	DefaultEpsTol  = 1e-6                   // ε_tol of Algorithm 2
	DefaultMaxIter = 500                    // GBD iteration cap
	DefaultTMin    = 100 * time.Millisecond // T_min of Algorithm 2
	DefaultTMax    = 500 * time.Millisecond // T_max of Algorithm 2
	MaxCandidates  = 4096                   // the most Settings.Candidates a policy is asked to screen
)

func (s Settings) withDefaults() Settings {
	if s.Eps <= 0 {
		s.Eps = DefaultEps
	}
	if s.EpsTol <= 0 {
		s.EpsTol = DefaultEpsTol
	}
	if s.MaxIter <= 0 {
		s.MaxIter = DefaultMaxIter
	}
	if s.TMin <= 0 {
		s.TMin = DefaultTMin
	}
	if s.TMax <= 0 {
		s.TMax = DefaultTMax
	}
	if s.TMax < s.TMin {
		s.TMax = s.TMin
	}
	s.Candidates = min(max(s.Candidates, 0), MaxCandidates)
	s.Budget = s.Budget.withDefaults()
	return s
}

// AgentStats counts what the agent did in one solve (Algorithm 2). Every proposal ends in exactly
// one outcome, so Proposed = (Proposed − Feasible) + Accepted + SolverSelected + Repeated + Final, and
// Feasible = Accepted + SolverSelected + Repeated + Final.
type AgentStats struct {
	Proposed int // proposals made
	Feasible int // proposals that passed the feasibility screen
	// Accepted counts proposals that became the next iterate y^{k+1} with the gap still open, so the
	// NLP evaluates them next (unless the deadline or the iteration cap stops the solve first).
	Accepted       int
	SolverSelected int // feasible proposals replaced by the time-limited solve's better ȳ
	// Repeated counts feasible proposals the comparison would have taken but that had been
	// evaluated already: they bring no new cut, so the master supplied the next iterate.
	Repeated int
	// Final counts feasible proposals at the master step that ended the solve (its bound closed the
	// gap, or the solve was stopped there): no next iterate was evaluated, whoever chose it.
	Final int
	// Benched counts master steps taken without asking the policy because it had run out of
	// Settings.Patience, or because the time left before the deadline was less than twice what a
	// proposal is expected to take (ProposalCost): classical GBD's exact masters. They are not
	// proposals.
	Benched int
}

// Add adds b's counts to a's.
func (a *AgentStats) Add(b AgentStats) {
	a.Proposed += b.Proposed
	a.Feasible += b.Feasible
	a.Accepted += b.Accepted
	a.SolverSelected += b.SolverSelected
	a.Repeated += b.Repeated
	a.Final += b.Final
	a.Benched += b.Benched
}

// Outcome of one agent proposal.
const (
	OutcomeNone       = ""           // no agent
	OutcomeInfeasible = "infeasible" // violated a feasibility cut: master solved to optimality
	OutcomeUndecided  = "undecided"  // independent-IL output between the thresholds, or not in Y_pb
	OutcomeAccepted   = "accepted"   // ŷ is y^{k+1}, new, and the solve goes on to evaluate it
	OutcomeReplaced   = "replaced"   // the time-limited solve found a better ȳ
	OutcomeRepeat     = "repeat"     // ŷ passed the screen and the comparison but was evaluated before: replaced by the master's point
	OutcomeFinal      = "final"      // ŷ passed the screen, but this master step ended the solve: no next iterate
	OutcomeError      = "error"      // the policy returned an error: treated like a rejection
)

// Iteration is one line of the per-iteration trace.
type Iteration struct {
	K           int
	Y           []float64 // y^k evaluated
	Feasible    bool      // S(y^k) feasible
	Z           float64   // Z(y^k) (feasible only)
	Cut         Cut
	NoGood      bool
	LBD, UBD    float64 // after this iteration's master
	SubTime     time.Duration
	MasterTime  time.Duration
	Master      MasterStatus // 0 when no master was solved (converged after the subproblem)
	MasterY     []float64
	MasterMu    float64
	MasterBound float64
	Tk          time.Duration // time limit given to the master (0 = to optimality)
	Proposal    int           // index of ŷ in Y_pb (-1: no agent or no proposal)
	Logits      []float64     // the proposal's logits over Y_pb (a copy), when the agent gave logits
	Probs       []float64     // the proposal's per-binary probabilities (a copy), independent-IL agent
	Outcome     string
	Next        []float64 // y^{k+1}
}

// Result of a solve.
type Result struct {
	Status         Status
	Y              []float64 // best incumbent (nil without one)
	X              []float64
	Objective      float64 // Z(Y); +Inf without incumbent
	LBD, UBD       float64
	Iterations     int
	MasterTime     time.Duration
	SubproblemTime time.Duration
	Total          time.Duration
	Agent          AgentStats
	// Proposal is Settings.Proposal updated with this solve's proposals.
	Proposal ProposalCost
	Trace    []Iteration
	Cuts     []Cut // every cut of the final master problem, carried ones first
	// Duals are the multipliers behind each cut of Cuts (same order): nil for carried and no-good
	// cuts. A CutPool keeps them to carry the cuts to the next control step.
	Duals []*CutDuals
	// Hinges are the problem's hinges that the solve's optimality cuts carried (hinge.go; nil:
	// none, or a master that does not take them).
	Hinges *Hinges
	// Crossing is how far LBD exceeded UBD before it was clamped (0 when it never did). Above
	// CrossTol relative it means an invalid cut and the solve ends StatusFailed.
	Crossing float64
	Message  string
}

// Gap is the certified gap UBD − LBD.
func (r *Result) Gap() float64 { return r.UBD - r.LBD }

// Recorder receives every master problem as the engine builds it (for the decision log). It is called
// synchronously after the iteration's master step; it must not keep view or it beyond the call.
type Recorder interface {
	RecordMaster(view *MasterView, it *Iteration)
}

// Engine runs classical GBD (Policy nil) or agent-based GBD (Algorithm 2). It does no I/O and owns no
// goroutines; all time comes from Clock. An Engine may be reused for successive solves but not
// concurrently.
type Engine struct {
	NLP      nlp.Solver // default: NewNLP(), made once and kept by the Engine
	Master   Master     // required: a master back-end (gbd/master: enum, staged, cbc)
	Policy   Policy     // nil: classical GBD
	Clock    Clock      // default RealClock
	Recorder Recorder   // optional

	defaultNLP nlp.Solver
}

// nlpSolver is the back-end of the next solve: Engine.NLP, or the Engine's own default one, so
// that its workspace (and a native back-end's symbolic analysis) survives between solves.
func (e *Engine) nlpSolver() nlp.Solver {
	if e.NLP != nil {
		return e.NLP
	}
	if e.defaultNLP == nil {
		e.defaultNLP = NewNLP()
	}
	return e.defaultNLP
}

// roundedCopy is y rounded to the nearest integers (nil stays nil).
func roundedCopy(y []float64) []float64 {
	if y == nil {
		return nil
	}
	r := make([]float64, len(y))
	for i, v := range y {
		r[i] = math.Round(v)
	}
	return r
}

// Solve runs GBD on p with admissible set ypb (which must be p's: EnumerateAdmissible(p.NY, p.Pure),
// or ImplicitAdmissible(p.NY, p.Pure) with a master that works from the rows).
func (e *Engine) Solve(p *Problem, ypb *Admissible, set Settings) (*Result, error) {
	clock := e.Clock
	if clock == nil {
		clock = RealClock
	}
	start := clock.Now()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if ypb == nil || ypb.NY != p.NY {
		return nil, fmt.Errorf("gbd: admissible set does not match the problem's %d binaries", p.NY)
	}
	if e.Master == nil {
		// The engine links no master back-end: gbd/master/enum is the exact scan of an
		// enumerated Y_pb, gbd/master.NewExact picks the exact master for any Y_pb.
		return nil, errors.New("gbd: Engine.Master is nil: give the engine a master back-end")
	}
	set = set.withDefaults()
	y0 := roundedCopy(set.Y0)
	if !ypb.Empty() && y0 != nil && !ypb.Contains(y0) {
		return nil, fmt.Errorf("gbd: initial assignment %v is not in the admissible set", set.Y0)
	}
	for k := range set.Cuts {
		if len(set.Cuts[k].Coef) != p.NY {
			return nil, fmt.Errorf("gbd: carried cut %d has %d coefficients, want %d", k, len(set.Cuts[k].Coef), p.NY)
		}
	}
	r := &Result{LBD: math.Inf(-1), UBD: math.Inf(1), Objective: math.Inf(1), Proposal: set.Proposal}
	if !set.Deadline.IsZero() && set.Deadline.Sub(clock.Now()) <= set.Budget.Margin {
		// Setting the master up (the carried cuts) and compiling the NLPs would all run past
		// the deadline for nothing.
		r.Status, r.Message = StatusNoSolution, "no feasible solution in time: the deadline had passed before the solve started"
		r.Total = clock.Now().Sub(start)
		return r, nil
	}
	master := e.Master
	if err := master.Reset(p.NY, p.Pure, ypb); err != nil {
		return nil, err
	}
	if m, ok := master.(Interruptible); ok {
		m.SetInterrupt(set.Interrupt)
	}
	if ypb.Empty() {
		r.Status, r.Message = StatusInfeasible, "no assignment satisfies the pure binary constraints"
		r.Total = clock.Now().Sub(start)
		return r, nil
	}
	y := y0
	if y == nil {
		if y = make([]float64, p.NY); !ypb.First(y) {
			r.Status, r.Message = StatusInfeasible, "no assignment satisfies the pure binary constraints"
			r.Total = clock.Now().Sub(start)
			return r, nil
		}
	}
	sub := NewSubproblems(p, e.nlpSolver(), set.NLP)
	sub.Clock = clock
	if set.ClassicalCuts {
		sub.lag = nil
	}
	if m, ok := master.(StageTabled); ok && m.TakesStageTables() && set.StageCuts && !set.ClassicalCuts && ypb.Stages != nil {
		sub.enableStageCuts(ypb.Stages)
	}
	if m, ok := master.(HingeTaker); ok && sub.lag != nil && !set.NoHinges {
		if h := FindHinges(p, ypb.Stages); h != nil && m.TakeHinges(h) {
			sub.hinges, r.Hinges = h, h
		}
	}
	for k := range set.Cuts {
		c := set.Cuts[k]
		c.Carried, c.Iter = true, -1
		r.Cuts = append(r.Cuts, c)
		r.Duals = append(r.Duals, nil)
		master.AddCut(&r.Cuts[len(r.Cuts)-1])
	}
	if set.X0 != nil {
		sub.SetStart(set.X0)
	}
	s := &solveState{e: e, p: p, ypb: ypb, set: set, clock: clock, master: master, sub: sub, r: r,
		visited: map[string]bool{}, gap0: math.NaN()}
	for _, st := range set.Starts {
		if y := roundedCopy(st); len(y) == p.NY && ypb.Contains(y) {
			s.starts = append(s.starts, y)
		}
	}
	s.run(y)
	r.Total = clock.Now().Sub(start)
	return r, nil
}

type solveState struct {
	e       *Engine
	p       *Problem
	ypb     *Admissible
	set     Settings
	clock   Clock
	master  Master
	sub     *Subproblems
	r       *Result
	visited map[string]bool
	starts  [][]float64 // Settings.Starts still to evaluate (admissible ones)
	gap0    float64     // first finite gap (T_k schedule)
	lost    int         // proposals in a row that did not become the next iterate
	benched bool        // the policy ran out of Settings.Patience: classical master steps from here
	polish  Polisher
}

// ProposalCost is what a policy's proposals are known to take: the slowest proposal (screen and
// polish included) among those made with the most master cuts, and that number of cuts. A
// proposal cannot be stopped, so under a deadline the engine does not ask the policy when the time
// left is less than twice Expected(cuts now); the master step is then classical GBD's
// (AgentStats.Benched). Without this rule a policy slower than the deadline cost the daemon
// actions (docs/method.md, "A slow agent is not asked past the deadline").
type ProposalCost struct {
	Time time.Duration
	Cuts int
}

// maxExtrapolation is how far, in cuts, ProposalCost.Expected trusts a measurement.
const maxExtrapolation = 4

// Expected is the time a proposal is expected to take on a master of cuts cuts: the time measured,
// scaled by the cuts (+1) when there are more now, up to maxExtrapolation times as many. Beyond,
// the measurement says little (a policy's fixed cost dominates at a few cuts, and scaling it to
// the hundreds of carried cuts of the next step would bench a fast policy for good), so the
// proposal is expected to take what was measured, is asked if that fits, and measures itself: a
// policy too slow for the deadline can overrun once per fourfold growth of the cuts, a fast one
// is not benched for good.
func (c ProposalCost) Expected(cuts int) time.Duration {
	r := float64(cuts+1) / float64(c.Cuts+1)
	if r <= 1 || r > maxExtrapolation {
		return c.Time
	}
	return time.Duration(float64(c.Time) * r)
}

// observe records a proposal that took t on a master of cuts cuts.
func (c *ProposalCost) observe(t time.Duration, cuts int) {
	if cuts > c.Cuts || (cuts == c.Cuts && t > c.Time) {
		c.Time, c.Cuts = t, cuts
	}
}

// proposalFits reports whether the time left covers twice what a proposal is expected to take now.
func (s *solveState) proposalFits(rem time.Duration) bool {
	return s.set.Deadline.IsZero() || rem >= 2*s.r.Proposal.Expected(len(s.r.Cuts))
}

// tally counts a proposal's outcome against the policy's patience.
func (s *solveState) tally(won bool) {
	if won {
		s.lost = 0
		return
	}
	s.lost++
	if s.set.Patience > 0 && s.lost >= s.set.Patience {
		s.benched = true
	}
}

func yKey(y []float64) string {
	var b strings.Builder
	for _, v := range y {
		if v > 0.5 {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

// remaining is the time left before the deadline less the return margin (+Inf without deadline).
func (s *solveState) remaining() time.Duration {
	if s.set.Interrupt != nil && s.set.Interrupt() {
		return 0
	}
	if s.set.Deadline.IsZero() {
		return time.Duration(math.MaxInt64)
	}
	return s.set.Deadline.Sub(s.clock.Now()) - s.set.Budget.Margin
}

func (s *solveState) finish(st Status, msg string) {
	r := s.r
	if st == StatusGap && msg == "" && s.set.Deadline.IsZero() {
		// Without a deadline only an interruption ends a solve early without saying why: Interrupt,
		// or a master that Interrupt stopped (Interruptible) or the same signal ended.
		msg = "interrupted"
	}
	if st == StatusGap && r.Y == nil {
		st = StatusNoSolution
		if msg == "" {
			msg = "no feasible solution in time"
		} else if msg == "interrupted" {
			msg = "interrupted before a feasible solution"
		}
	}
	if r.LBD > r.UBD {
		// Valid cuts keep LBD ≤ Z(y*) ≤ UBD; cuts are exact only to the NLP's tolerance, so a
		// crossing within CrossTol is rounding and is clamped. A larger one means a cut was
		// invalid: the incumbent is feasible but nothing certifies it, and the solve says so.
		r.Crossing = r.LBD - r.UBD
		r.LBD = r.UBD
		if r.Crossing > CrossTol*(1+math.Abs(r.UBD)) {
			st = StatusFailed
			msg = joinMsg(fmt.Sprintf("lower bound exceeded the incumbent %.10g by %.3g: a cut is invalid, so the incumbent is feasible but not certified", r.UBD, r.Crossing), msg)
		}
	}
	r.Status, r.Message = st, msg
}

// CrossTol is the relative amount by which LBD may exceed UBD through rounding in the cuts (the
// NLPs end at a scaled KKT residual of 1e-9); a larger crossing fails the solve (Result.Crossing).
const CrossTol = 1e-6

func joinMsg(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

func (s *solveState) run(y []float64) {
	r, set := s.r, s.set
	for k := 0; ; k++ {
		if k >= set.MaxIter {
			s.finish(StatusGap, fmt.Sprintf("iteration limit %d reached", set.MaxIter))
			return
		}
		rem := s.remaining()
		if rem <= 0 {
			s.finish(StatusGap, "")
			return
		}
		it := Iteration{K: k, Y: append([]float64(nil), y...), Proposal: -1}
		s.visited[yKey(y)] = true
		t0 := s.clock.Now()
		limit := time.Duration(0)
		if !set.Deadline.IsZero() {
			limit = time.Duration(float64(rem) * set.Budget.NLPFrac)
		}
		res, err := s.sub.Evaluate(y, limit)
		it.SubTime = s.clock.Now().Sub(t0)
		r.SubproblemTime += it.SubTime
		r.Iterations = k + 1
		if err != nil {
			if errors.Is(err, ErrTimeUp) {
				s.finish(StatusGap, "")
				return
			}
			s.finish(StatusFailed, err.Error())
			return
		}
		it.Feasible, it.Cut, it.NoGood = res.Feasible, res.Cut, res.NoGood
		it.Cut.Iter = k
		if res.Feasible {
			it.Z = res.Z
			if res.Z < r.UBD {
				r.UBD, r.Objective = res.Z, res.Z
				r.Y, r.X = it.Y, res.X
				if c, ok := s.master.(Cutoff); ok {
					c.SetCutoff(cutoffOf(r.UBD, set.Eps))
				}
			}
		}
		r.Cuts = append(r.Cuts, it.Cut)
		r.Duals = append(r.Duals, res.Duals)
		s.master.AddCut(&r.Cuts[len(r.Cuts)-1])
		if r.UBD-r.LBD <= set.Eps {
			it.LBD, it.UBD = r.LBD, r.UBD
			r.Trace = append(r.Trace, it)
			s.finish(StatusOptimal, "")
			return
		}
		if next := s.nextStart(); next != nil {
			// A start, not a master's answer: nothing for the recorder, no bound to raise.
			it.LBD, it.UBD, it.Next = r.LBD, r.UBD, next
			r.Trace = append(r.Trace, it)
			y = next
			continue
		}
		next, done := s.masterStep(&it)
		it.LBD, it.UBD = r.LBD, r.UBD
		it.Next = next
		if s.e.Recorder != nil {
			s.e.Recorder.RecordMaster(&MasterView{Cuts: r.Cuts, Prev: it.Y, Ypb: s.ypb}, &it)
		}
		r.Trace = append(r.Trace, it)
		if done {
			return
		}
		if r.UBD-r.LBD <= set.Eps {
			s.finish(StatusOptimal, "")
			return
		}
		y = next
	}
}

// cutoffOf is the cutoff the engine gives a master (Cutoff): UBD − ε, raised by the least amount
// that makes UBD − cutoff ≤ ε hold in floating point too, so that a bound at the cutoff closes the
// gap as Result.Gap computes it.
func cutoffOf(ubd, eps float64) float64 {
	c := ubd - eps
	for ubd-c > eps {
		c = math.Nextafter(c, math.Inf(1))
	}
	return c
}

// nextStart is the next of Settings.Starts not yet evaluated (nil when none is left).
func (s *solveState) nextStart() []float64 {
	for len(s.starts) > 0 {
		y := s.starts[0]
		s.starts = s.starts[1:]
		if !s.visited[yKey(y)] {
			return y
		}
	}
	return nil
}

// masterStep chooses y^{k+1}: the master's optimum in classical GBD, Algorithm 2 with a policy.
// done reports that the solve ended (status already set).
func (s *solveState) masterStep(it *Iteration) (next []float64, done bool) {
	r, set := s.r, s.set
	rem := s.remaining()
	if rem <= 0 {
		s.finish(StatusGap, "")
		return nil, true
	}
	var yhat []float64
	chosen := false // the comparison μ̂_B ≤ μ̄_B + ε_tol picked ŷ
	if s.e.Policy != nil && (s.benched || !s.proposalFits(rem)) {
		r.Agent.Benched++
	} else if s.e.Policy != nil {
		t0, ncuts := s.clock.Now(), len(r.Cuts)
		yhat = s.propose(it)
		r.Proposal.observe(s.clock.Now().Sub(t0), ncuts)
		if yhat != nil {
			// Only once the step knows y^{k+1}, and whether the solve goes on, can it say what
			// became of the proposal; every return below passes through here.
			defer func() { s.settle(it, yhat, next, chosen, done) }()
		}
		// The policy's time is the budget's too: the master gets what is left after it.
		if rem = s.remaining(); rem <= 0 {
			s.finish(StatusGap, "")
			return nil, true
		}
	}
	limit := time.Duration(0)
	if yhat != nil {
		limit = s.tk(rem)
		it.Tk = limit
	} else if !set.Deadline.IsZero() {
		limit = rem // to optimality, but never past the deadline
	}
	budgeted := false
	if b, ok := s.master.(Budgeted); ok && yhat == nil {
		if d := b.StepLimit(); d > 0 && (limit == 0 || d < limit) {
			limit, budgeted = d, true
		}
	}
	t0 := s.clock.Now()
	mr, err := s.master.Solve(limit, yhat)
	if err == nil && budgeted && mr.Status == MasterNoIncumbent {
		// Nothing within the budget: the step is classical GBD's exact master after all (under a
		// deadline, to the time left).
		limit = 0
		if !set.Deadline.IsZero() {
			limit = s.remaining()
		}
		if set.Deadline.IsZero() || limit > 0 {
			mr, err = s.master.Solve(limit, nil)
		}
	}
	it.MasterTime = s.clock.Now().Sub(t0)
	r.MasterTime += it.MasterTime
	if err != nil {
		s.finish(StatusFailed, "master: "+err.Error())
		return nil, true
	}
	it.Master, it.MasterY, it.MasterMu, it.MasterBound = mr.Status, mr.Y, mr.Mu, mr.Bound
	switch mr.Status {
	case MasterInfeasible:
		if r.Y == nil {
			s.finish(StatusInfeasible, "the feasibility cuts exclude every admissible assignment")
		} else {
			// The incumbent's assignment is feasible, so no valid feasibility cut excludes it and
			// the master cannot be infeasible: one of the cuts is wrong. Nothing certifies the
			// incumbent, which is still a feasible point.
			s.finish(StatusFailed, "master infeasible although the incumbent's assignment is feasible: a feasibility cut is invalid")
		}
		return nil, true
	case MasterAboveCutoff:
		s.certifyAboveCutoff(mr)
		return nil, true
	case MasterNoIncumbent:
		r.LBD = math.Max(r.LBD, mr.Bound)
		if yhat == nil {
			s.finish(StatusGap, "")
			return nil, true
		}
	default:
		r.LBD = math.Max(r.LBD, mr.Bound)
	}
	if math.IsInf(s.gap0, 0) || math.IsNaN(s.gap0) {
		if g := r.UBD - r.LBD; !math.IsInf(g, 0) && !math.IsNaN(g) {
			s.gap0 = g
		}
	}
	next = mr.Y
	if yhat != nil {
		if chosen = mr.Y == nil || MaxOptimality(r.Cuts, yhat) <= mr.Mu+set.EpsTol; chosen {
			next = yhat
		}
	}
	// An assignment already evaluated brings no new cut, so proposing it again would loop. Prefer
	// the master's own point; if that is a repeat too and the master was not solved exactly, solve it
	// exactly now: its bound then closes the gap, because the repeat's cut is already in.
	if next != nil && s.visited[yKey(next)] {
		if mr.Y != nil && !s.visited[yKey(mr.Y)] {
			next = mr.Y
		} else {
			if mr.Status != MasterOptimal || limit > 0 {
				lim := time.Duration(0)
				if !set.Deadline.IsZero() {
					if lim = s.remaining(); lim <= 0 {
						// No time for the exact master: the solve ends here with its gap.
						s.finish(StatusGap, "")
						return nil, true
					}
				}
				t1 := s.clock.Now()
				mr2, err := s.master.Solve(lim, nil)
				dt := s.clock.Now().Sub(t1)
				it.MasterTime += dt
				r.MasterTime += dt
				if err == nil && mr2.Status == MasterAboveCutoff {
					s.certifyAboveCutoff(mr2)
					return nil, true
				}
				if err == nil && (mr2.Status == MasterOptimal || mr2.Status == MasterStopped) {
					r.LBD = math.Max(r.LBD, mr2.Bound)
					next = mr2.Y
				}
			}
			if r.UBD-r.LBD > set.Eps && (next == nil || s.visited[yKey(next)]) {
				s.finish(StatusGap, "the master repeated an evaluated assignment before the gap closed (accuracy of the cuts or the master at this objective scale)")
				return nil, true
			}
		}
	}
	return append([]float64(nil), next...), false
}

// certifyAboveCutoff ends the solve on a master's MasterAboveCutoff: every admissible y has μ_B
// above the cutoff the engine set (cutoffOf), so LBD is within ε of UBD and the incumbent is
// certified. A bound that does not close the gap fails the solve: the master broke its contract.
func (s *solveState) certifyAboveCutoff(mr MasterResult) {
	r := s.r
	r.LBD = math.Max(r.LBD, mr.Bound)
	if r.UBD-r.LBD > s.set.Eps {
		s.finish(StatusFailed, fmt.Sprintf("master answered above the cutoff with bound %g, more than ε below UBD %g", mr.Bound, r.UBD))
		return
	}
	s.finish(StatusOptimal, "")
}

// settle records the outcome of a proposal that passed the screen, from what the master step did
// with it: final when the step ended the solve (nothing more is evaluated), replaced when ȳ won the
// comparison, accepted when ŷ is the next iterate — new, since the repeat rule never lets an
// evaluated assignment through with the gap open — and repeat when ŷ won but had been evaluated, so
// the master supplied the next iterate.
func (s *solveState) settle(it *Iteration, yhat, next []float64, chosen, done bool) {
	a := &s.r.Agent
	switch {
	case done || s.r.UBD-s.r.LBD <= s.set.Eps:
		it.Outcome = OutcomeFinal
		a.Final++
	case !chosen:
		it.Outcome = OutcomeReplaced
		a.SolverSelected++
		s.tally(false)
	case next != nil && yKey(next) == yKey(yhat):
		it.Outcome = OutcomeAccepted
		a.Accepted++
		s.tally(true)
	default:
		it.Outcome = OutcomeRepeat
		a.Repeated++
		s.tally(false)
	}
}

// propose asks the policy for ŷ and screens it; nil means the master must be solved to optimality.
func (s *solveState) propose(it *Iteration) []float64 {
	r := s.r
	view := MasterView{Cuts: r.Cuts, Prev: it.Y, Ypb: s.ypb, Candidates: s.set.Candidates}
	prop, err := s.e.Policy.Propose(&view)
	r.Agent.Proposed++
	if err != nil {
		it.Outcome = OutcomeError
		s.tally(false)
		return nil
	}
	// Policies may reuse their output buffers at the next call, so the trace keeps copies.
	it.Logits = append([]float64(nil), prop.Logits...)
	it.Probs = append([]float64(nil), prop.Probs...)
	yhat := make([]float64, s.p.NY)
	j, why := Decide(s.ypb, prop, yhat)
	if j < 0 {
		it.Outcome = why
		s.tally(false)
		return nil
	}
	it.Proposal = j
	if !SatisfiesFeasibilityCuts(r.Cuts, yhat) {
		it.Outcome = OutcomeInfeasible
		s.tally(false)
		return nil
	}
	r.Agent.Feasible++
	if s.set.Polish {
		s.polish.Polish(s.ypb, r.Cuts, yhat)
	}
	return yhat
}

// tk is the paper's schedule T_k = T_min + (T_max − T_min)(1 − gap_k/gap_0), with both ends capped
// by the remaining time. gap_0 is the first finite gap; until there is one, T_k = T_min.
func (s *solveState) tk(rem time.Duration) time.Duration {
	set := s.set
	tmin, tmax := set.TMin, set.TMax
	if !set.Deadline.IsZero() {
		tmin = min(tmin, time.Duration(float64(rem)*set.Budget.MasterMinFrac))
		tmax = min(tmax, time.Duration(float64(rem)*set.Budget.MasterMaxFrac))
		if tmax < tmin {
			tmin = tmax
		}
	}
	gap := s.r.UBD - s.r.LBD
	ratio := 1.0
	if !math.IsNaN(s.gap0) && !math.IsInf(s.gap0, 0) && s.gap0 > 0 && !math.IsInf(gap, 0) {
		ratio = math.Min(1, math.Max(0, gap/s.gap0))
	}
	t := tmin + time.Duration(float64(tmax-tmin)*(1-ratio))
	if t <= 0 {
		t = time.Microsecond
	}
	return t
}
