package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master"
	"gbdmpc/gbd/nlp"
	"gbdmpc/mpc"
	"gbdmpc/policy"
	"gbdmpc/telemetry"
)

// ShadowConfig says how the held-out solves are re-run.
type ShadowConfig struct {
	Family mpc.Family // required: rebuilds each solve's MINLP from its instance
	// NewMaster builds the master back-end of every run (nil: master.NewExact, the enum master or,
	// for an implicit Y_pb, the staged one). The agents' runs and
	// the classical reference use the same one.
	NewMaster func() gbd.Master
	NewNLP    func() nlp.Solver // the NLP back-end of every run (nil: gbd.NewNLP)
	// Settings are the GBD settings of every run (ε, ε_tol, T_min, T_max). Y0 and Cuts are taken
	// from each logged solve, Deadline is never set: a shadow run compares policies, not deadlines.
	Settings gbd.Settings
	// MaxSolves re-runs only the latest MaxSolves held-out solves (0: all of them).
	MaxSolves int
	Progress  func(done, total int)
}

// RunStats summarise one way of re-solving the held-out solves.
type RunStats struct {
	Solves  int `json:"solves"`
	Optimal int `json:"optimal"`
	// MatchClassical counts solves whose outcome is classical GBD's: both infeasible, or both with an
	// incumbent whose objectives differ by at most ε. Two runs that each close the gap to ε are both
	// within ε of the optimum, so a larger difference means one of them stopped at a wrong point.
	MatchClassical int `json:"match_classical"`
	Failed         int `json:"failed"` // engine error or a solver failure
	// ReproducesLog (classical only) counts solves whose logged outcome was optimal and whose re-run
	// reaches the logged objective within ε: a check that instances rebuild the logged problems.
	ReproducesLog int `json:"reproduces_log,omitempty"`
	LoggedOptimal int `json:"logged_optimal,omitempty"`

	Iterations        float64 `json:"iterations_mean"`
	MasterSeconds     float64 `json:"master_seconds_total"`
	MasterSecondsMean float64 `json:"master_seconds_mean"`
	TotalSeconds      float64 `json:"total_seconds_total"`

	Proposed       int     `json:"proposed"`
	Feasible       int     `json:"feasible"`
	Accepted       int     `json:"accepted"`
	SolverSelected int     `json:"solver_selected"`
	Repeated       int     `json:"repeated,omitempty"` // feasible proposals already evaluated (gbd.OutcomeRepeat)
	Final          int     `json:"final,omitempty"`    // feasible proposals at a solve's last master step
	Acceptance     float64 `json:"acceptance"`         // accepted / proposed, 0 when nothing was proposed
}

// PolicyReport is one policy on the held-out slice.
type PolicyReport struct {
	Version string         `json:"version"`
	Variant string         `json:"variant"`
	Metrics policy.Metrics `json:"metrics"` // policy.Evaluate on the held-out master problems
	Rerun   RunStats       `json:"rerun"`   // agent-based GBD on the held-out solves
}

// RunOutcome is one run of one solve.
type RunOutcome struct {
	Status        string        `json:"status"`
	Objective     telemetry.Num `json:"objective"` // "+Inf" without an incumbent
	Iterations    int           `json:"iterations"`
	MasterSeconds float64       `json:"master_seconds"`
	Proposed      int           `json:"proposed,omitempty"`
	Accepted      int           `json:"accepted,omitempty"`
	Match         bool          `json:"match_classical"`
}

// SolveOutcome compares the runs of one held-out solve.
type SolveOutcome struct {
	Set       int         `json:"set"`
	ID        string      `json:"solve_id"`
	Plant     string      `json:"plant"`
	Error     string      `json:"error,omitempty"` // why it could not be re-run
	Classical *RunOutcome `json:"classical,omitempty"`
	Old       *RunOutcome `json:"old,omitempty"`
	New       *RunOutcome `json:"new,omitempty"`
}

// ShadowReport compares the old and new policies on the held-out slice.
type ShadowReport struct {
	Masters      int            `json:"masters"` // held-out master problems
	Solves       int            `json:"solves"`  // held-out solves
	Rerun        int            `json:"rerun"`   // of those, re-run
	Unreplayable int            `json:"unreplayable"`
	Master       string         `json:"master"`
	Classical    RunStats       `json:"classical"`
	Old          *PolicyReport  `json:"old,omitempty"` // nil without an old policy
	New          *PolicyReport  `json:"new"`
	PerSolve     []SolveOutcome `json:"per_solve"`
}

// Shadow evaluates old (may be nil) and the candidate on the held-out slice: their decisions on the logged
// master problems (exact match, feasibility), and agent-based GBD on every held-out solve rebuilt
// from its instance, against classical GBD with the same master back-end.
func Shadow(ctx context.Context, held *policy.Dataset, solves []Solve, old, candidate *policy.Agent, cfg ShadowConfig) (*ShadowReport, error) {
	if cfg.Family == nil || candidate == nil {
		return nil, errors.New("replay: shadow evaluation needs a family and a new policy")
	}
	newMaster := cfg.NewMaster
	if newMaster == nil {
		newMaster = func() gbd.Master { return master.NewExact(cfg.Family.Admissible()) }
	}
	rep := &ShadowReport{Masters: len(held.Samples), Solves: len(solves)}
	var err error
	if rep.New, err = evaluate(candidate, held); err != nil {
		return nil, err
	}
	if old != nil {
		if rep.Old, err = evaluate(old, held); err != nil {
			return nil, err
		}
	}
	if cfg.MaxSolves > 0 && len(solves) > cfg.MaxSolves {
		solves = solves[len(solves)-cfg.MaxSolves:]
	}

	type method struct {
		eng   gbd.Engine
		stats *RunStats
		pick  func(*SolveOutcome) **RunOutcome
	}
	newNLP := cfg.NewNLP
	if newNLP == nil {
		newNLP = gbd.NewNLP
	}
	methods := []*method{{eng: gbd.Engine{NLP: newNLP(), Master: newMaster()}, stats: &rep.Classical,
		pick: func(o *SolveOutcome) **RunOutcome { return &o.Classical }}}
	if old != nil {
		methods = append(methods, &method{eng: gbd.Engine{NLP: newNLP(), Master: newMaster(), Policy: old}, stats: &rep.Old.Rerun,
			pick: func(o *SolveOutcome) **RunOutcome { return &o.Old }})
	}
	methods = append(methods, &method{eng: gbd.Engine{NLP: newNLP(), Master: newMaster(), Policy: candidate}, stats: &rep.New.Rerun,
		pick: func(o *SolveOutcome) **RunOutcome { return &o.New }})
	rep.Master = methods[0].eng.Master.Name()
	ypb := cfg.Family.Admissible()
	eps := cfg.Settings.Eps
	if eps <= 0 {
		eps = 1e-3 // gbd.Settings' documented default
	}

	for n, s := range solves {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o := SolveOutcome{Set: s.Set, ID: s.ID, Plant: s.Plant}
		if p, err := problemOf(cfg.Family, &s); err != nil {
			o.Error = err.Error()
			rep.Unreplayable++
		} else {
			rep.Rerun++
			set := cfg.Settings
			set.Deadline = time.Time{}
			set.Y0, set.Cuts = nil, s.Carried
			if len(s.Y0) == ypb.NY && ypb.Contains(s.Y0) {
				set.Y0 = s.Y0
			}
			var ref *gbd.Result // classical GBD's run: methods[0]
			for i, m := range methods {
				r, err := m.eng.Solve(p, ypb, set)
				m.stats.Solves++
				if err != nil {
					m.stats.Failed++
					*m.pick(&o) = &RunOutcome{Status: "error", Objective: telemetry.Num(math.Inf(1))}
					continue
				}
				if i == 0 {
					ref = r
				}
				ro := tally(m.stats, r, ref, eps)
				*m.pick(&o) = &ro
			}
			if s.Logged != nil && s.Logged.Status == gbd.StatusOptimal.String() {
				rep.Classical.LoggedOptimal++
				if ref != nil && ref.Y != nil && math.Abs(ref.Objective-s.Logged.Objective.Float()) <= eps {
					rep.Classical.ReproducesLog++
				}
			}
		}
		rep.PerSolve = append(rep.PerSolve, o)
		if cfg.Progress != nil {
			cfg.Progress(n+1, len(solves))
		}
	}
	for _, m := range methods {
		m.stats.finish()
	}
	return rep, nil
}

func evaluate(a *policy.Agent, held *policy.Dataset) (*PolicyReport, error) {
	pr := &PolicyReport{Version: a.Version(), Variant: string(a.Variant())}
	if len(held.Samples) == 0 {
		return pr, nil
	}
	m, err := policy.Evaluate(a, held)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	pr.Metrics = m
	return pr, nil
}

// problemOf rebuilds a logged solve's MINLP the way the daemon built it: the family decodes the
// logged instance as a measurement and transcribes it.
func problemOf(f mpc.Family, s *Solve) (*gbd.Problem, error) {
	if len(s.Instance) == 0 {
		return nil, errors.New("no instance logged")
	}
	m, err := f.DecodeMeasurement(s.Instance)
	if err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}
	return m.Problem()
}

// tally adds one run to st and compares it with the classical reference run (nil when it failed).
func tally(st *RunStats, r, ref *gbd.Result, eps float64) RunOutcome {
	o := RunOutcome{Status: r.Status.String(), Objective: telemetry.Num(r.Objective), Iterations: r.Iterations,
		MasterSeconds: r.MasterTime.Seconds(), Proposed: r.Agent.Proposed, Accepted: r.Agent.Accepted}
	switch r.Status {
	case gbd.StatusOptimal:
		st.Optimal++
	case gbd.StatusFailed:
		st.Failed++
	}
	o.Match = sameOutcome(r, ref, eps)
	if o.Match {
		st.MatchClassical++
	}
	st.Iterations += float64(r.Iterations)
	st.MasterSeconds += r.MasterTime.Seconds()
	st.TotalSeconds += r.Total.Seconds()
	st.Proposed += r.Agent.Proposed
	st.Feasible += r.Agent.Feasible
	st.Accepted += r.Agent.Accepted
	st.SolverSelected += r.Agent.SolverSelected
	st.Repeated += r.Agent.Repeated
	st.Final += r.Agent.Final
	return o
}

// sameOutcome compares a run with classical GBD's; without a classical run nothing matches.
func sameOutcome(r, ref *gbd.Result, eps float64) bool {
	if ref == nil {
		return false
	}
	if r.Y == nil || ref.Y == nil {
		return r.Y == nil && ref.Y == nil && r.Status == ref.Status
	}
	return math.Abs(r.Objective-ref.Objective) <= eps
}

func (st *RunStats) finish() {
	if st.Solves > 0 {
		st.Iterations /= float64(st.Solves)
		st.MasterSecondsMean = st.MasterSeconds / float64(st.Solves)
	}
	if st.Proposed > 0 {
		st.Acceptance = float64(st.Accepted) / float64(st.Proposed)
	}
}
