package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/gbd/nlp"
	"gbdmpc/mpc"
	"gbdmpc/solver"
	"gbdmpc/wire"
)

// solveOptions are the flags shared by every command that runs GBD: the plant, the agent, and the
// solver settings (solver.Spec), which --config supplies where the command line does not.
type solveOptions struct {
	plant    string
	policy   string
	seed     uint64
	spec     solver.Spec
	deadline time.Duration
	config   plantConfig
	fs       *flag.FlagSet

	policyVersion string // resolve's: the agent's version ("" for classical GBD)
}

func (o *solveOptions) register(fs *flag.FlagSet) {
	o.fs = fs
	fs.StringVar(&o.plant, "plant", "synthesis", "plant family: synthesis | pumpstation")
	o.config.register(fs) // --config also supplies the solver settings not given as flags
	o.spec = solver.DefaultSpec()
	o.spec.RegisterFlags(fs)
	fs.StringVar(&o.policy, "policy", "", "agent: a policy file, or builtin:oracle|random|infeasible|suboptimal (empty: classical GBD)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the builtin:random policy")
	solver.DurationVar(fs, &o.deadline, "deadline", 0, "per-instance deadline from reading the instance, 0 for none")
}

// validate settles the solver settings, the flags given over --config's plant, and checks them.
func (o *solveOptions) validate() error {
	if o.deadline < 0 {
		return fmt.Errorf("--deadline %v: must not be negative", o.deadline)
	}
	p, err := o.config.plant()
	if err != nil {
		return err
	}
	if p != nil {
		o.spec = o.spec.Over(p.Spec, o.fs)
	}
	return o.spec.CheckFlags()
}

// newNLP makes the NLP back-end of --nlp.
func (o *solveOptions) newNLP() (func() nlp.Solver, error) { return backend.NLPByName(o.spec.NLP) }

// resolve turns the family, master and policy flags into what a GBD run needs.
func (o *solveOptions) resolve() (family, func() gbd.Master, gbd.Policy, error) {
	fam, err := o.config.family(o.plant)
	if err != nil {
		return nil, nil, nil, err
	}
	newMaster, name, err := backend.MasterFor(o.spec.Master, fam.Admissible())
	if err != nil {
		return nil, nil, nil, err
	}
	if name != o.spec.Master {
		fmt.Fprintf(os.Stderr, "gbdmpc: master %s: %s\n", o.spec.Master, name)
	}
	if err := gbd.MasterFits(fam.Admissible(), newMaster()); err != nil {
		return nil, nil, nil, fmt.Errorf("--master %s: %w", o.spec.Master, err)
	}
	pol, version, err := loadPolicy(o.policy, o.seed, fam)
	if err != nil {
		return nil, nil, nil, err
	}
	o.policyVersion = version
	return fam, newMaster, pol, nil
}

// settings are the GBD settings of the solver flags (solver.Spec.Settings).
func (o *solveOptions) settings() gbd.Settings { return o.spec.Settings() }

func cmdSolve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("solve", stderr)
	var o solveOptions
	o.register(fs)
	instances := fs.String("instances", "-", "JSON Lines file of instances, - for standard input")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	fam, newMaster, pol, err := o.resolve()
	if err != nil {
		return err
	}
	newNLP, err := o.newNLP()
	if err != nil {
		return err
	}
	in := stdin
	if *instances != "-" {
		f, err := os.Open(*instances)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	s := &lineSolver{fam: fam, engine: gbd.Engine{NLP: newNLP(), Master: newMaster(), Policy: pol}, set: o.settings(), deadline: o.deadline}
	return s.run(ctx, in, stdout)
}

// lineSolver answers instance lines one by one; a bad line gets an error result, never a stop.
type lineSolver struct {
	fam      family
	engine   gbd.Engine
	set      gbd.Settings
	deadline time.Duration
}

func (s *lineSolver) run(ctx context.Context, in io.Reader, out io.Writer) error {
	w := bufio.NewWriter(out)
	defer w.Flush()
	lines, readErr := readLines(ctx, in)
	line := 0
	for {
		var text []byte
		select {
		case <-ctx.Done():
			return ctx.Err()
		case t, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil {
					return fmt.Errorf("reading instances after line %d: %w", line, err)
				}
				return nil
			}
			text = t
		}
		line++
		start := time.Now()
		if len(trimSpace(text)) == 0 {
			continue
		}
		res := s.solveLine(ctx, text, start)
		if err := writeResult(w, res, start); err != nil {
			return err
		}
		// Flush per line so a consumer reading a pipe sees each result as soon as it exists.
		if err := w.Flush(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err // a signal: the interrupted line's result is out, no further line is read
		}
	}
}

// readLines reads in line by line in its own goroutine, so that a signal ends the command while
// it waits on a pipe that stays open (a read cannot be interrupted). The line channel closes at
// the end of the input, and the error channel then gives the read error (nil at EOF); on ctx's
// end the goroutine stops at its next line, or with the process when it is blocked in a read.
func readLines(ctx context.Context, in io.Reader) (<-chan []byte, <-chan error) {
	lines, errc := make(chan []byte), make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		for sc.Scan() {
			select {
			case lines <- append([]byte(nil), sc.Bytes()...):
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
		}
		errc <- sc.Err()
	}()
	return lines, errc
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// result is one output line of `gbdmpc solve` (specs/interfaces.md §1).
type result struct {
	V      int    `json:"v"`
	Status string `json:"status"`
	figures
	TotalSeconds float64     `json:"total_seconds"`
	Agent        *wire.Agent `json:"agent,omitempty"`
	Message      string      `json:"message,omitempty"`
	// Relaxed is the soft problem's solution when the instance's hard limits cannot be held (status
	// infeasible): specs/interfaces.md, "relaxed".
	Relaxed *relaxedResult `json:"relaxed,omitempty"`
}

// figures are a GBD solve's outcome and costs, as a result line and its relaxed part both report
// them.
type figures struct {
	Y                 []float64 `json:"y"`
	Objective         jsonNum   `json:"objective"`
	LBD               jsonNum   `json:"lbd"`
	UBD               jsonNum   `json:"ubd"`
	Gap               jsonNum   `json:"gap"`
	Iterations        int       `json:"iterations"`
	MasterSeconds     float64   `json:"master_seconds"`
	SubproblemSeconds float64   `json:"subproblem_seconds"`
}

// relaxedResult is the soft solve of an infeasible instance: its own status, y and bounds (the
// objective is the soft one: cost plus penalties, €), with how the plan breaks the limits
// (mpc.Relaxation's fields).
type relaxedResult struct {
	Status string `json:"status"` // optimal | gap, of the soft problem
	figures
	Agent *wire.Agent `json:"agent,omitempty"`
	mpc.Relaxation
	// Message says why the soft solve stopped with a gap (the engine's reason), as a result line's
	// message does.
	Message string `json:"message,omitempty"`
}

// jsonNum is a float that encodes ±Inf and NaN as null (JSON has no such numbers).
type jsonNum float64

func (n jsonNum) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

func errorResult(msg string) *result {
	return &result{V: 1, Status: "error", figures: noFigures(math.NaN()), Message: msg}
}

func (s *lineSolver) solveLine(ctx context.Context, text []byte, start time.Time) *result {
	m, err := s.fam.DecodeMeasurement(text)
	if err != nil {
		return errorResult(err.Error())
	}
	set := s.set
	// A signal ends the solve in hand with what it has (status gap, message "interrupted"); its
	// result is written, and the command then stops. A CBC master in progress ends too: the cbc
	// master asks this while its worker solves and kills the worker (gbd.Interruptible).
	set.Interrupt = func() bool { return ctx.Err() != nil }
	if s.deadline > 0 {
		set.Deadline = start.Add(s.deadline)
	}
	// The hard problem first, with the whole time as the controller gives it at a normal step, and
	// its soft version with what is left when its limits cannot be held (mpc.Solve).
	// Each starts where a daemon's first step for this plant starts: the measurement's own guess
	// (mpc.StartPoint; the held unit states for the pump station), else the engine's default.
	out, err := mpc.Solve(m, set, 1, nil, func(kind mpc.ProblemKind, p *gbd.Problem, set gbd.Settings) (*gbd.Result, error) {
		if set.Y0 == nil {
			set.Y0, set.X0 = mpc.StartPoint(s.fam.Admissible(), p, m, nil, kind)
		}
		return s.engine.Solve(p, s.fam.Admissible(), set)
	})
	if err != nil {
		return errorResult(err.Error())
	}
	return outcomeResult(out, s.engine.Policy != nil)
}

// outcomeResult reports a measurement's outcome: the hard problem's result, with status infeasible
// and the soft solution in "relaxed" when its limits cannot be held, or the soft problem's result
// when that one found a plan within the limits that the hard solve had not found in its time.
func outcomeResult(out *mpc.Outcome, agent bool) *result {
	if out.Infeasible == "" {
		res := toResult(out.Result, agent)
		if out.Note != "" {
			res.Message = joinMessage(res.Message, out.Note)
		}
		return res
	}
	var res *result
	if out.Hard != nil {
		res = toResult(out.Hard, agent)
	} else { // the pre-check: no hard solve ran
		res = &result{V: 1, figures: noFigures(math.Inf(1))}
		if agent {
			res.Agent = &wire.Agent{}
		}
	}
	res.Status = "infeasible"
	rel := out.Relaxed
	if rel == nil { // proven infeasible, but the soft problem gave no plan (a deadline)
		res.Message = out.Note
		return res
	}
	res.Message = "hard limits cannot be held (" + rel.Proof + "): " + rel.Shortfall
	if rel.ProofDetail != "" {
		res.Message += "; " + rel.ProofDetail
	}
	r := out.Soft
	st, msg := "optimal", ""
	if r.Status != gbd.StatusOptimal {
		st, msg = "gap", r.Message
	}
	res.Relaxed = &relaxedResult{Status: st, figures: figuresOf(r), Agent: agentOf(r, agent), Relaxation: *rel, Message: msg}
	return res
}

func joinMessage(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// toResult maps a gbd.Result to the interface's statuses: no_solution and failed have no place in
// optimal|gap|infeasible, so they are errors with the engine's message.
func toResult(r *gbd.Result, agent bool) *result {
	out := &result{V: 1, figures: figuresOf(r), Agent: agentOf(r, agent)}
	switch r.Status {
	case gbd.StatusOptimal:
		out.Status = "optimal"
	case gbd.StatusGap:
		out.Status = "gap"
		out.Message = r.Message
	case gbd.StatusInfeasible:
		out.Status = "infeasible"
		out.Message = r.Message
	default:
		out.Status = "error"
		out.Message = r.Status.String() + ": " + r.Message
	}
	return out
}

// writeResult stamps total_seconds as late as possible: after encoding, just before the write.
func writeResult(w io.Writer, r *result, start time.Time) error {
	r.TotalSeconds = time.Since(start).Seconds()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

func figuresOf(r *gbd.Result) figures {
	return figures{Y: r.Y, Objective: jsonNum(r.Objective), LBD: jsonNum(r.LBD), UBD: jsonNum(r.UBD),
		Gap: jsonNum(r.UBD - r.LBD), Iterations: r.Iterations,
		MasterSeconds: r.MasterTime.Seconds(), SubproblemSeconds: r.SubproblemTime.Seconds()}
}

// noFigures are those of a line without a solve: objective and bounds v, the gap not a number.
func noFigures(v float64) figures {
	return figures{Objective: jsonNum(v), LBD: jsonNum(v), UBD: jsonNum(v), Gap: jsonNum(math.NaN())}
}

// agentOf is the agent's part of a result (nil when no agent ran).
func agentOf(r *gbd.Result, agent bool) *wire.Agent {
	if !agent {
		return nil
	}
	s := r.Agent
	return &wire.Agent{Proposed: s.Proposed, Feasible: s.Feasible, Accepted: s.Accepted, SolverSelected: s.SolverSelected,
		Repeated: s.Repeated, Final: s.Final, Benched: s.Benched}
}
