package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"gbdmpc/gbd"
	"gbdmpc/gbd/nlp"
	"gbdmpc/mpc"
)

// Method is one way of solving the benchmark instances.
type Method struct {
	Name      string
	Policy    gbd.Policy // nil: classical GBD
	NewMaster func() gbd.Master
	// Reference names the method whose master time this one's is compared with (classical GBD on
	// the same master back-end); empty means BenchConfig.Reference.
	Reference string
}

// BenchConfig configures the paper's Evaluation B (Table II).
type BenchConfig struct {
	Family   mpc.Family
	Sample   Sampler // must draw instances the method can solve; infeasible ones are skipped
	Sets     int
	Seed     uint64
	Methods  []Method
	Settings gbd.Settings
	NewNLP   func() nlp.Solver // the NLP back-end (nil: gbd.NewNLP)
	// Reference, when set, names the method whose master time the others are compared with.
	Reference string
	Progress  func(done, total int)
}

// Stat is a sample's mean and standard deviation.
type Stat struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

func stat(v []float64) Stat {
	if len(v) == 0 {
		return Stat{Mean: math.NaN(), SD: math.NaN()}
	}
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	if len(v) > 1 {
		s /= float64(len(v) - 1)
	}
	return Stat{Mean: m, SD: math.Sqrt(s)}
}

func (s Stat) String() string { return fmt.Sprintf("%.4g ± %.3g", s.Mean, s.SD) }

// MethodReport is one column of Table II.
type MethodReport struct {
	Name              string  `json:"name"`
	Instances         int     `json:"instances"`
	Iterations        Stat    `json:"iterations"`
	MasterSeconds     Stat    `json:"master_seconds"`
	SubproblemSeconds Stat    `json:"subproblem_seconds"`
	TotalSeconds      Stat    `json:"total_seconds"`
	TotalP50          float64 `json:"total_seconds_p50"`
	TotalP95          float64 `json:"total_seconds_p95"`
	MasterReduction   float64 `json:"master_time_reduction_pct"` // vs the reference method
	Reference         string  `json:"reference,omitempty"`
	// Shares of the proposals by outcome (gbd.AgentStats): accepted (the paper's agent-selected
	// iterate: ŷ is the next iterate and is evaluated), replaced by the time-limited solve's ȳ (the
	// paper's solver-selected), repeat (ŷ won but was evaluated already), final (ŷ passed the screen
	// at the master step that ended the solve), infeasible (rejected by the screen, or undecided).
	AgentSelectedPct  float64 `json:"agent_selected_pct"`
	SolverSelectedPct float64 `json:"solver_selected_pct"`
	RepeatPct         float64 `json:"repeat_pct"`
	FinalPct          float64 `json:"final_pct"`
	InfeasiblePct     float64 `json:"proposal_infeasible_pct"`
	Proposed          int     `json:"proposed"`
	// Per instance, as the paper's Table II gives them (e.g. 6.27 / 8.83 iterations).
	AgentSelected     Stat `json:"agent_selected"`
	SolverSelected    Stat `json:"solver_selected"`
	Match             int  `json:"solution_match"`
	NotOptimal        int  `json:"not_optimal"`
	iters, mt, st, tt []float64
	acc, sol          []float64
}

// BenchReport is Table II.
type BenchReport struct {
	Family   string          `json:"family"`
	Sets     int             `json:"sets"`
	Seed     uint64          `json:"seed"`
	TMin     float64         `json:"tmin_seconds"`
	TMax     float64         `json:"tmax_seconds"`
	Eps      float64         `json:"eps"`
	EpsTol   float64         `json:"eps_tol"`
	Methods  []*MethodReport `json:"methods"`
	Skipped  int             `json:"skipped_infeasible"`
	RefTotal Stat            `json:"ground_truth_seconds"`
}

// Bench solves Sets fresh instances with every method and compares each answer with the ground
// truth (the convex NLP at every admissible y, which is the MINLP's global optimum).
func Bench(ctx context.Context, cfg BenchConfig) (*BenchReport, error) {
	if cfg.Family == nil || cfg.Sample == nil || cfg.Sets <= 0 || len(cfg.Methods) == 0 {
		return nil, fmt.Errorf("bench: need a family, a sampler, sets and methods")
	}
	set := cfg.Settings
	rep := &BenchReport{Family: cfg.Family.Name(), Sets: cfg.Sets, Seed: cfg.Seed,
		TMin: set.TMin.Seconds(), TMax: set.TMax.Seconds(), Eps: set.Eps, EpsTol: set.EpsTol}
	for _, m := range cfg.Methods {
		rep.Methods = append(rep.Methods, &MethodReport{Name: m.Name})
	}
	ypb := cfg.Family.Admissible()
	solver := newNLP(cfg.NewNLP)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x62656e63))
	var gtTimes []float64
	for done := 0; done < cfg.Sets; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := cfg.Family.DecodeMeasurement(cfg.Sample(rng))
		if err != nil {
			return nil, err
		}
		p, err := m.Problem()
		if err != nil {
			return nil, err
		}
		clock := gbd.RealClock
		t0 := clock.Now()
		gt, err := gbd.SolveByEnumeration(p, ypb, solver, set)
		if err != nil {
			return nil, err
		}
		if !gt.Feasible {
			rep.Skipped++
			continue
		}
		gtTimes = append(gtTimes, clock.Now().Sub(t0).Seconds())
		for i, meth := range cfg.Methods {
			e := gbd.Engine{NLP: solver, Master: meth.NewMaster(), Policy: meth.Policy}
			r, err := e.Solve(p, ypb, set)
			if err != nil {
				return nil, fmt.Errorf("bench: %s: %w", meth.Name, err)
			}
			mr := rep.Methods[i]
			mr.Instances++
			if r.Status != gbd.StatusOptimal {
				mr.NotOptimal++
			}
			if r.Y != nil && relClose(r.Objective, gt.Objective, 1e-6) {
				mr.Match++
			}
			mr.iters = append(mr.iters, float64(r.Iterations))
			mr.mt = append(mr.mt, r.MasterTime.Seconds())
			mr.st = append(mr.st, r.SubproblemTime.Seconds())
			mr.tt = append(mr.tt, r.Total.Seconds())
			mr.Proposed += r.Agent.Proposed
			mr.AgentSelectedPct += float64(r.Agent.Accepted)
			mr.SolverSelectedPct += float64(r.Agent.SolverSelected)
			mr.RepeatPct += float64(r.Agent.Repeated)
			mr.FinalPct += float64(r.Agent.Final)
			mr.InfeasiblePct += float64(r.Agent.Proposed - r.Agent.Feasible)
			mr.acc = append(mr.acc, float64(r.Agent.Accepted))
			mr.sol = append(mr.sol, float64(r.Agent.SolverSelected))
		}
		done++
		if cfg.Progress != nil {
			cfg.Progress(done, cfg.Sets)
		}
	}
	rep.RefTotal = stat(gtTimes)
	byName := map[string]*MethodReport{}
	for _, mr := range rep.Methods {
		mr.Iterations, mr.MasterSeconds = stat(mr.iters), stat(mr.mt)
		mr.SubproblemSeconds, mr.TotalSeconds = stat(mr.st), stat(mr.tt)
		mr.TotalP50, mr.TotalP95 = quantile(mr.tt, 0.5), quantile(mr.tt, 0.95)
		mr.AgentSelected, mr.SolverSelected = stat(mr.acc), stat(mr.sol)
		if mr.Proposed > 0 {
			for _, v := range []*float64{&mr.AgentSelectedPct, &mr.SolverSelectedPct, &mr.RepeatPct, &mr.FinalPct, &mr.InfeasiblePct} {
				*v *= 100 / float64(mr.Proposed)
			}
		}
		byName[mr.Name] = mr
	}
	for i, mr := range rep.Methods {
		name := cfg.Methods[i].Reference
		if name == "" {
			name = cfg.Reference
		}
		if ref := byName[name]; ref != nil {
			mr.Reference = name
			mr.MasterReduction = 100 * (ref.MasterSeconds.Mean - mr.MasterSeconds.Mean) / ref.MasterSeconds.Mean
		}
	}
	return rep, nil
}

// quantile is the q-quantile of v by linear interpolation between order statistics.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

func relClose(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// Markdown renders the report as the paper's Table II, one column per method.
func (r *BenchReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Table II — %s, %d parameter sets (seed %d)\n\n", r.Family, r.Sets, r.Seed)
	fmt.Fprintf(&b, "T_min = %g s, T_max = %g s, ε = %g, ε_tol = %g. Mean ± sd per instance.\n\n", r.TMin, r.TMax, r.Eps, r.EpsTol)
	b.WriteString("| Metric |")
	for _, m := range r.Methods {
		fmt.Fprintf(&b, " %s |", m.Name)
	}
	b.WriteString("\n|---|")
	for range r.Methods {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	row := func(name string, f func(m *MethodReport) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, m := range r.Methods {
			fmt.Fprintf(&b, " %s |", f(m))
		}
		b.WriteString("\n")
	}
	row("Iterations", func(m *MethodReport) string { return m.Iterations.String() })
	row("Master time (ms)", func(m *MethodReport) string { return ms(m.MasterSeconds) })
	row("Master time reduction (vs)", func(m *MethodReport) string {
		if m.Reference == "" {
			return "—"
		}
		return fmt.Sprintf("%.1f%% (%s)", m.MasterReduction, m.Reference)
	})
	row("Subproblem time (ms)", func(m *MethodReport) string { return ms(m.SubproblemSeconds) })
	row("Total time (ms)", func(m *MethodReport) string { return ms(m.TotalSeconds) })
	row("Total time p50 / p95 (ms)", func(m *MethodReport) string {
		return fmt.Sprintf("%.3f / %.3f", 1e3*m.TotalP50, 1e3*m.TotalP95)
	})
	perInstance := func(s Stat, m *MethodReport) string {
		if m.Proposed == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f / %.2f", s.Mean, m.Iterations.Mean)
	}
	row("Agent-selected iterate, per instance / iterations", func(m *MethodReport) string { return perInstance(m.AgentSelected, m) })
	row("Solver-selected iterate, per instance / iterations", func(m *MethodReport) string { return perInstance(m.SolverSelected, m) })
	row("Proposals: agent-selected", func(m *MethodReport) string { return pct(m.AgentSelectedPct, m.Proposed) })
	row("Proposals: solver-selected", func(m *MethodReport) string { return pct(m.SolverSelectedPct, m.Proposed) })
	row("Proposals: repeat (already evaluated)", func(m *MethodReport) string { return pct(m.RepeatPct, m.Proposed) })
	row("Proposals: at the final master step", func(m *MethodReport) string { return pct(m.FinalPct, m.Proposed) })
	row("Proposals: infeasible or undecided", func(m *MethodReport) string { return pct(m.InfeasiblePct, m.Proposed) })
	row("Solution match", func(m *MethodReport) string { return fmt.Sprintf("%d/%d", m.Match, m.Instances) })
	fmt.Fprintf(&b, "\nA proposal is agent-selected only when it is the next iterate and the NLP evaluates it "+
		"(gbd/doc.go, Algorithm 2); the five proposal shares add up to 100%%.\n")
	fmt.Fprintf(&b, "Ground truth (NLP at every admissible y): %s ms per instance; %d infeasible draws skipped.\n",
		ms(r.RefTotal), r.Skipped)
	return b.String()
}

func ms(s Stat) string { return fmt.Sprintf("%.3f ± %.3f", 1e3*s.Mean, 1e3*s.SD) }

func pct(v float64, n int) string {
	if n == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// JSON is the report as indented JSON.
func (r *BenchReport) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }
