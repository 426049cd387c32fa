//go:build linux

// Command gbdmpc-bonmin solves the instances `gbdmpc solve` reads with Bonmin (B-BB or B-OA)
// instead of GBD, as a reference to measure against. It is its own binary so that the daemon does
// not link Bonmin; `make bonmin` builds it as bin/gbdmpc-bonmin.
//
//	gbdmpc-bonmin [--config FILE [--config-plant ID] | --plant synthesis|pumpstation]
//	              [--instances FILE|-] [--algorithm bbb|boa] [--time-limit 60s]
//
// A plant's family comes from --config exactly as `gbdmpc solve --config` builds it (its params:
// pumps, blocks, max running, ...), or is the named family's default. Every instance line becomes
// the family's hard problem (mpc.Measurement.Problem), solved once by Bonmin: unlike `gbdmpc solve`
// there is no soft problem for an infeasible instance. One JSON result is written per line, in the
// style of specs/interfaces.md §1:
//
//	{"v":1,"status":"optimal|gap|infeasible|error","y":[…],"objective":…,"lbd":…,"ubd":…,"gap":…,
//	 "nodes":…,"solve_seconds":…,"total_seconds":…,"algorithm":"B-BB","message":"…"}
//
// status gap means the time limit stopped Bonmin with an incumbent (gap = ubd − lbd, Bonmin's
// best bound); a time limit without an incumbent is an error. lbd is Bonmin's best bound. Numbers
// that are not finite are null. Whatever Bonmin or its solvers print goes to standard error: the
// results are the only output on standard output.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"

	"gbdmpc/configs"
	"gbdmpc/internal/bonmin"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/wire"
)

func main() {
	out, err := resultStream()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gbdmpc-bonmin:", err)
		os.Exit(1)
	}
	if err := run(os.Args[1:], os.Stdin, out, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gbdmpc-bonmin:", err)
		}
		os.Exit(2)
	}
}

// resultStream keeps standard output for the results alone: it returns a duplicate of it and
// points descriptor 1 at standard error, where anything the C++ libraries print then goes.
func resultStream() (*os.File, error) {
	fd, err := syscall.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("duplicating standard output: %w", err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Dup3(2, 1, 0); err != nil {
		return nil, fmt.Errorf("redirecting standard output: %w", err)
	}
	return os.NewFile(uintptr(fd), "results"), nil
}

type options struct {
	config, configPlant, plant, instances, algorithm string
	timeLimit                                        time.Duration
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gbdmpc-bonmin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.config, "config", "", "daemon config file: take the plant family and its params from it (as gbdmpc solve --config); --plant is then ignored")
	fs.StringVar(&o.configPlant, "config-plant", "", "with --config: the plant id (default: the file's first plant)")
	fs.StringVar(&o.plant, "plant", "synthesis", "plant family without --config: synthesis | pumpstation")
	fs.StringVar(&o.instances, "instances", "-", "JSON Lines file of instances, - for standard input")
	fs.StringVar(&o.algorithm, "algorithm", "bbb", "Bonmin algorithm: bbb (B-BB, NLP branch and bound) | boa (B-OA, outer approximation)")
	fs.DurationVar(&o.timeLimit, "time-limit", 60*time.Second, "Bonmin's time_limit per instance: CPU time of the process, checked between nodes and MILPs, so not a wall-clock deadline")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	alg, err := bonmin.ParseAlgorithm(o.algorithm)
	if err != nil {
		return err
	}
	if o.timeLimit <= 0 {
		return fmt.Errorf("--time-limit must be positive, got %v", o.timeLimit)
	}
	fam, err := family(o)
	if err != nil {
		return err
	}
	in := stdin
	if o.instances != "-" {
		f, err := os.Open(o.instances)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	return solveAll(fam, bonmin.Options{Algorithm: alg, TimeLimit: o.timeLimit}, in, stdout)
}

// family resolves the plant family as `gbdmpc solve` does: the configured plant's with --config,
// else the named family's default.
func family(o options) (mpc.Family, error) {
	if o.config == "" {
		if o.configPlant != "" {
			return nil, errors.New("--config-plant needs --config")
		}
		return registry.Default(o.plant)
	}
	c, err := configs.Load(configs.Source{File: o.config, NoEnv: true, Families: registry.Names()})
	if err != nil {
		return nil, err
	}
	for i := range c.Plants {
		p := &c.Plants[i]
		if o.configPlant == "" || p.ID == o.configPlant {
			f, err := registry.FromConfig(p)
			if err != nil {
				return nil, fmt.Errorf("config %s, plant %s: %w", o.config, p.ID, err)
			}
			return f, nil
		}
	}
	if o.configPlant == "" {
		return nil, fmt.Errorf("config %s: no plants", o.config)
	}
	return nil, fmt.Errorf("config %s: no plant %q", o.config, o.configPlant)
}

// result is one output line.
type result struct {
	V            int        `json:"v"`
	Status       string     `json:"status"`
	Y            []float64  `json:"y"`
	Objective    wire.Float `json:"objective"`
	LBD          wire.Float `json:"lbd"`
	UBD          wire.Float `json:"ubd"`
	Gap          wire.Float `json:"gap"`
	Nodes        int        `json:"nodes"`
	SolveSeconds float64    `json:"solve_seconds"`
	TotalSeconds float64    `json:"total_seconds"`
	Algorithm    string     `json:"algorithm"`
	Message      string     `json:"message,omitempty"`
}

// solveAll answers the instance lines one by one; a bad line gets an error result, never a stop.
func solveAll(fam mpc.Family, opt bonmin.Options, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	w := bufio.NewWriter(out)
	for line := 1; sc.Scan(); line++ {
		start := time.Now()
		text := sc.Bytes()
		if len(trimSpace(text)) == 0 {
			continue
		}
		r := solveLine(fam, opt, text)
		r.TotalSeconds = time.Since(start).Seconds()
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		if err := w.Flush(); err != nil { // one result as soon as it exists
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading instances: %w", err)
	}
	return nil
}

func solveLine(fam mpc.Family, opt bonmin.Options, text []byte) *result {
	fail := func(err error) *result {
		nan := wire.Float(math.NaN())
		return &result{V: 1, Status: "error", Objective: nan, LBD: nan, UBD: nan, Gap: nan, Algorithm: opt.Algorithm.String(), Message: err.Error()}
	}
	m, err := fam.DecodeMeasurement(text)
	if err != nil {
		return fail(err)
	}
	p, err := m.Problem()
	if err != nil {
		return fail(err)
	}
	r, err := bonmin.Solve(p, opt)
	if err != nil {
		return fail(err)
	}
	out := &result{V: 1, Y: r.Y, Objective: wire.Float(r.Objective), LBD: wire.Float(r.Bound), UBD: wire.Float(r.Objective),
		Gap: wire.Float(r.Objective - r.Bound), Nodes: r.Nodes, SolveSeconds: r.Time.Seconds(),
		Algorithm: opt.Algorithm.String(), Message: r.Message}
	switch {
	case r.Status == bonmin.Optimal:
		out.Status = "optimal"
	case r.Status == bonmin.Infeasible:
		out.Status, out.UBD, out.Gap = "infeasible", wire.Float(math.Inf(1)), wire.Float(math.NaN())
	case r.Status == bonmin.TimeLimit && r.Y != nil:
		out.Status, out.Message = "gap", "time limit"
	default:
		out.Status = "error"
		if out.Message == "" {
			out.Message = r.Status.String()
		}
	}
	return out
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
