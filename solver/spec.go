package solver

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"gbdmpc/gbd"
)

// Spec is what a user chooses for a plant's GBD solves. Each field's config key is its
// mapstructure tag (a plant's keys in the daemon's config, which embeds Spec), its flag is the key
// with '-' for '_' (FlagName), and its flag help is its usage tag. A zero field means the
// documented default (DefaultSpec, WithDefaults).
//
// The solve's deadline is not here: it is an instant that whoever times a solve sets on its
// gbd.Settings (the daemon from the plant's deadline, the commands from their --deadline and
// --step-deadline flags).
type Spec struct {
	// Master is the master back-end, one of MasterNames (default auto: AutoMaster).
	Master string `mapstructure:"master" json:"master" usage:"master back-end"`
	// NLP is the NLP back-end, one of NLPNames (default native).
	NLP string `mapstructure:"nlp" json:"nlp" usage:"NLP back-end"`
	// Cuts is the kind of the solve's own optimality cuts, one of CutNames (default strengthened).
	// Stage cuts take effect over a staged Y_pb (move blocks) and are kept as their strengthened
	// part wherever a consumer cannot use the tables (carried to the next step, a CBC master).
	Cuts string `mapstructure:"cuts" json:"cuts" usage:"optimality cuts"`
	// Eps and EpsTol are ε and ε_tol of Algorithm 2 (defaults gbd.DefaultEps, gbd.DefaultEpsTol).
	Eps    float64 `mapstructure:"eps" json:"eps" usage:"ε: stop when UBD − LBD ≤ ε"`
	EpsTol float64 `mapstructure:"eps_tol" json:"eps_tol" usage:"ε_tol: accept the agent's ŷ when μ̂_B ≤ μ̄_B + ε_tol"`
	// TMin and TMax bound the time-limited master solves of Algorithm 2 (defaults gbd.DefaultTMin
	// and gbd.DefaultTMax; a step's deadline caps both further).
	TMin time.Duration `mapstructure:"tmin" json:"tmin" usage:"T_min of Algorithm 2"`
	TMax time.Duration `mapstructure:"tmax" json:"tmax" usage:"T_max of Algorithm 2"`
	// AgentPatience, when positive, is how many of the agent's proposals in a row may lose (not
	// become the next iterate) before a solve stops asking it and finishes as classical GBD (0, the
	// default: ask at every master step, as Algorithm 2 does; gbd.Settings.Patience).
	AgentPatience int `mapstructure:"agent_patience" json:"agent_patience" usage:"stop asking the agent for the rest of a solve after this many of its proposals in a row lost (0: ask at every master step, Algorithm 2)"`
	// AgentCandidates, above 1, lets an agent that decodes over a staged Y_pb (the structured agent)
	// screen that many of its best-scored admissible assignments and propose the one the optimality
	// cuts value least (gbd.Settings.Candidates). 0 or 1: its best-scored one, as Algorithm 2 has it.
	AgentCandidates int `mapstructure:"agent_candidates" json:"agent_candidates" usage:"structured agent: screen this many of its best-scored admissible assignments by the optimality cuts and propose the least (0 or 1: its best-scored one, Algorithm 2)"`
	// AgentPolish improves every proposal that passed the screen by block coordinate descent over
	// the move blocks on the master's cuts before the time-limited master starts from it
	// (gbd.Settings.Polish; a Y_pb with stages only). Default false, Algorithm 2 as published.
	AgentPolish bool `mapstructure:"agent_polish" json:"agent_polish" usage:"improve each proposal that passed the screen by block coordinate descent over the move blocks on the master's cuts (gbd.Settings.Polish)"`
}

// DefaultSpec is the documented default of every setting.
func DefaultSpec() Spec {
	return Spec{
		Master: masters[0].name, NLP: nlps[0].name, Cuts: cutKinds[0].name,
		Eps: gbd.DefaultEps, EpsTol: gbd.DefaultEpsTol, TMin: gbd.DefaultTMin, TMax: gbd.DefaultTMax,
	}
}

// WithDefaults is s with every zero setting at its default.
func (s Spec) WithDefaults() Spec {
	d := DefaultSpec()
	s.Master = cmp.Or(s.Master, d.Master)
	s.NLP = cmp.Or(s.NLP, d.NLP)
	s.Cuts = cmp.Or(s.Cuts, d.Cuts)
	s.Eps = cmp.Or(s.Eps, d.Eps)
	s.EpsTol = cmp.Or(s.EpsTol, d.EpsTol)
	s.TMin = cmp.Or(s.TMin, d.TMin)
	s.TMax = cmp.Or(s.TMax, d.TMax)
	return s
}

// Settings are the GBD settings s stands for: the one place a Spec becomes gbd.Settings. The
// caller adds what belongs to one solve (its deadline, starting point, carried cuts).
func (s Spec) Settings() gbd.Settings {
	return gbd.Settings{
		Eps: s.Eps, EpsTol: s.EpsTol, TMin: s.TMin, TMax: s.TMax,
		Patience: s.AgentPatience, Candidates: s.AgentCandidates, Polish: s.AgentPolish,
		StageCuts: s.Cuts == CutsStage, ClassicalCuts: s.Cuts == CutsClassical,
	}
}

// Problems reports every problem of s, each naming its setting by name(key): the key itself in a
// config (name nil), the flag on a command line (FlagName). Defaults are applied before: a zero
// setting is its default, not a problem.
func (s Spec) Problems(name func(key string) string) []error {
	if name == nil {
		name = func(key string) string { return key }
	}
	var errs []error
	add := func(key string, v any, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s %v: %s", name(key), v, fmt.Sprintf(format, args...)))
	}
	if !slices.Contains(MasterNames, s.Master) {
		add("master", fmt.Sprintf("%q", s.Master), "want %s", oneOf(MasterNames))
	}
	if !slices.Contains(NLPNames, s.NLP) {
		add("nlp", fmt.Sprintf("%q", s.NLP), "want %s", oneOf(NLPNames))
	}
	if !slices.Contains(CutNames, s.Cuts) {
		add("cuts", fmt.Sprintf("%q", s.Cuts), "want %s", oneOf(CutNames))
	}
	if !(s.Eps > 0) || math.IsInf(s.Eps, 0) {
		add("eps", s.Eps, "must be a positive number")
	}
	if !(s.EpsTol >= 0) || math.IsInf(s.EpsTol, 0) {
		add("eps_tol", s.EpsTol, "must be a non-negative number")
	}
	switch {
	case s.TMin <= 0:
		add("tmin", s.TMin, "must be positive")
	case s.TMax < s.TMin:
		add("tmax", s.TMax, "must not be below %s %v", name("tmin"), s.TMin)
	}
	if s.AgentPatience < 0 {
		add("agent_patience", s.AgentPatience, "must not be negative")
	}
	if err := CheckCandidates(name("agent_candidates"), s.AgentCandidates); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// CheckCandidates checks a number of candidates an agent is asked to screen (AgentCandidates, or
// a command's own such flag), named name in the error.
func CheckCandidates(name string, n int) error {
	switch {
	case n < 0:
		return fmt.Errorf("%s %d: must not be negative", name, n)
	case n > gbd.MaxCandidates:
		return fmt.Errorf("%s %d: must be at most %d", name, n, gbd.MaxCandidates)
	}
	return nil
}
