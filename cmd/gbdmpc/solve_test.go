package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/synthesis"
	"gbdmpc/solver"
)

type resultLine struct {
	V          int       `json:"v"`
	Status     string    `json:"status"`
	Y          []float64 `json:"y"`
	Objective  *float64  `json:"objective"`
	LBD        *float64  `json:"lbd"`
	UBD        *float64  `json:"ubd"`
	Iterations int       `json:"iterations"`
	Total      float64   `json:"total_seconds"`
	Agent      *struct {
		Proposed, Feasible, Accepted int
		SolverSelected               int `json:"solver_selected"`
	} `json:"agent"`
	Message string `json:"message"`
}

func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func parseResults(t *testing.T, out string) []resultLine { return parseLines[resultLine](t, out) }

// parseLines decodes every line of out as a T.
func parseLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var res []T
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r T
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("output line %q is not JSON: %v", sc.Text(), err)
		}
		res = append(res, r)
	}
	return res
}

// TestSolveHandWrittenFile runs `gbdmpc solve` on a file written as a user would: good, infeasible,
// blank and malformed lines. Every non-blank line gets a result, in order; bad ones are errors.
func TestSolveHandWrittenFile(t *testing.T) {
	data, err := os.ReadFile("testdata/synthesis.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, master := range []string{"enum", "cbc"} {
		out, stderr, code := runCLI(t, "", "solve", "--plant", "synthesis", "--master", master, "--instances", "testdata/synthesis.jsonl")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", master, code, stderr)
		}
		res := parseResults(t, out)
		want := []struct{ status, msg string }{
			{"optimal", ""}, {"infeasible", ""}, {"optimal", ""},
			{"error", "gamma"}, {"error", "U"}, {"error", "\"v\" is 2"}, {"error", ""}, {"error", "invalid"}, {"error", "rho"},
		}
		if len(res) != len(want) {
			t.Fatalf("%s: %d results, want %d:\n%s", master, len(res), len(want), out)
		}
		for i, w := range want {
			r := res[i]
			if r.V != 1 || r.Status != w.status || !strings.Contains(r.Message, w.msg) {
				t.Errorf("%s: line %d: status %q message %q, want %q containing %q", master, i, r.Status, r.Message, w.status, w.msg)
			}
			if r.Total <= 0 {
				t.Errorf("%s: line %d: total_seconds %g", master, i, r.Total)
			}
		}
		// The optimal answers are the ground truth.
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		k := 0
		for _, l := range lines {
			if strings.TrimSpace(l) == "" {
				continue
			}
			if res[k].Status == "optimal" {
				in, err := synthesis.Decode([]byte(l))
				if err != nil {
					t.Fatal(err)
				}
				gt, err := gbd.SolveByEnumeration(synthesis.Problem(in), synthesis.Admissible(), nil, gbd.Settings{})
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(*res[k].Objective-gt.Objective) > 1e-6*math.Abs(gt.Objective) {
					t.Errorf("%s: line %d: objective %g, ground truth %g", master, k, *res[k].Objective, gt.Objective)
				}
				if *res[k].UBD-*res[k].LBD > 1e-3 {
					t.Errorf("%s: line %d: gap %g above ε", master, k, *res[k].UBD-*res[k].LBD)
				}
			}
			k++
		}
	}
}

func TestSolveAgentReportsStatistics(t *testing.T) {
	in := `{"v":1,"gamma":[10,20,15,12,4],"U":10,"rho":[1.5,0.5]}` + "\n"
	for _, pol := range []string{"builtin:oracle", "builtin:random", "builtin:infeasible", "builtin:suboptimal"} {
		out, stderr, code := runCLI(t, in, "solve", "--plant", "synthesis", "--master", "enum", "--policy", pol)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", pol, code, stderr)
		}
		r := parseResults(t, out)[0]
		if r.Status != "optimal" || r.Agent == nil || r.Agent.Proposed == 0 {
			t.Fatalf("%s: %+v", pol, r)
		}
	}
}

func TestSolveCommandErrors(t *testing.T) {
	cases := [][]string{
		{"solve", "--plant", "nosuch"},
		{"solve", "--master", "gurobi"},
		{"solve", "--policy", "builtin:clever"},
		{"solve", "--policy", "/nonexistent/policy.gbdp"},
		{"solve", "--instances", "/nonexistent/file.jsonl"},
		{"solve", "--tmin", "1", "--tmax", "0.5"},
		{"solve", "--eps", "-1"},
		{"solve", "--agent-candidates", "-1"},
		{"solve", "--agent-candidates", "4097"},
		{"solve", "--agent-patience", "-1"},
		{"scaling", "--agent-candidates", "-1"},
		{"eval", "--policy", "p.gbdp", "--candidates", "5000"},
		{"replay", "--log", "/nonexistent", "--from-scratch", "--continue", "--policy", "p.gbdp"},
		{"replay", "--log", "/nonexistent", "--continue"},
	}
	for _, args := range cases {
		if _, _, code := runCLI(t, "", args...); code == 0 {
			t.Errorf("%v: exit 0, want an error", args)
		}
	}
	// The candidates' bound names the flag given (checked before any file is read).
	for _, args := range [][]string{{"solve", "--agent-candidates", "4097"}, {"eval", "--policy", "p.gbdp", "--candidates", "5000"}} {
		if _, stderr, _ := runCLI(t, "", args...); !strings.Contains(stderr, strings.Join(args[len(args)-2:], " ")+": must be at most 4096") {
			t.Errorf("%v: %q", args, stderr)
		}
	}
	if _, _, code := runCLI(t, "", "nosuchcommand"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

func TestSolvePumpStation(t *testing.T) {
	in := `{"v":1,"level_m":3.0,"pumps_on":[0,1,0],"demand_m3h":[60,60,60,60,70,70,70,70,90,90,90,90,80,80,80,80],"price_eur_kwh":[0.12,0.12,0.12,0.12,0.12,0.12,0.35,0.35,0.35,0.35,0.35,0.35,0.12,0.12,0.12,0.12]}
{"v":1,"level_m":3.0,"pumps_on":[0,1],"demand_m3h":[],"price_eur_kwh":[]}
`
	out, stderr, code := runCLI(t, in, "solve", "--plant", "pumpstation", "--master", "enum")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res := parseResults(t, out)
	if len(res) != 2 || res[0].Status != "optimal" || len(res[0].Y) != 12 || res[1].Status != "error" {
		t.Fatalf("results: %+v", res)
	}
}

// TestSolveCapacityShortfall is the instance written by hand: 300 m³/h for the whole horizon
// from 3 m, where the two largest pumps give 240 m³/h. The hard MINLP is infeasible and reported
// so, with the soft problem's solution in "relaxed": both large pumps at full flow from the first
// block, the level down to the tank's floor and no lower, the rest of the demand unserved. The
// servable line after it is optimal with no "relaxed"; a synthesis instance that is infeasible has
// no soft version and stays a plain "infeasible".
func TestSolveCapacityShortfall(t *testing.T) {
	series := func(v float64) string {
		return strings.TrimSuffix(strings.Repeat(strconv.FormatFloat(v, 'g', -1, 64)+",", 16), ",")
	}
	instance := func(demand float64) string {
		return `{"v":1,"level_m":3.0,"pumps_on":[0,0,0],"demand_m3h":[` + series(demand) + `],"price_eur_kwh":[` + series(0.2) + "]}\n"
	}
	out, stderr, code := runCLI(t, instance(300)+instance(120), "solve", "--plant", "pumpstation", "--master", "enum")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	type relaxed struct {
		Status    string    `json:"status"`
		Y         []float64 `json:"y"`
		Objective *float64  `json:"objective"`
		LBD, UBD  *float64
		mpc.Relaxation
	}
	type line struct {
		Status  string   `json:"status"`
		Message string   `json:"message"`
		Relaxed *relaxed `json:"relaxed"`
	}
	got := parseLines[line](t, out)
	if len(got) != 2 {
		t.Fatalf("%d results: %s", len(got), out)
	}
	r := got[0]
	if r.Status != "infeasible" || r.Relaxed == nil || !strings.Contains(r.Message, "hard limits cannot be held") {
		t.Fatalf("shortfall: %s", out)
	}
	x := r.Relaxed
	// Pumps 2 and 3 (pump-major y) in every block; pump 1 never.
	wantY := []float64{0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}
	if x.Status != "optimal" || fmt.Sprint(x.Y) != fmt.Sprint(wantY) || x.Objective == nil || x.LBD == nil || x.UBD == nil {
		t.Errorf("relaxed solve: %+v", x)
	}
	// 60 m³/h short from 3 m: 0.3 m a step, below 1 m from the end of step 6, empty at the end of
	// step 9, then 60 m³/h unserved for 6 steps of 0.25 h: 90 m³.
	if x.Limit != "level_min_m" || x.Bound != 1 || math.Abs(x.MaxViolation-1) > 1e-5 || x.FirstStep != 6 || x.WorstStep != 9 ||
		math.Abs(x.Unserved-90) > 1e-3 || x.UnservedUnit != "m3" || x.Proof != "precheck" {
		t.Errorf("relaxation: %+v", x)
	}
	if got[1].Status != "optimal" || got[1].Relaxed != nil {
		t.Errorf("servable line: %+v", got[1])
	}

	out, stderr, code = runCLI(t, `{"v":1,"gamma":[10,20,15,12,4],"U":10,"rho":[0.2,0.3]}`+"\n", "solve", "--plant", "synthesis", "--master", "enum")
	if code != 0 || !strings.Contains(out, `"status":"infeasible"`) || strings.Contains(out, `"relaxed"`) {
		t.Errorf("infeasible synthesis: exit %d, %s%s", code, out, stderr)
	}
}

// TestSolveFlagsFromConfig: with --config, every solver setting of the plant reaches the command,
// and a flag given on the command line wins over the file.
func TestSolveFlagsFromConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte(`broker: {embedded: true}
plants: [{id: p, family: pumpstation, period: 1s, master: staged, nlp: ipopt, cuts: stage, eps: 0.002, eps_tol: 3.0e-6,
  tmin: 70ms, tmax: 90ms, agent_patience: 4, agent_candidates: 32, agent_polish: true}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var o solveOptions
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.register(fs)
	if err := fs.Parse([]string{"--config", cfg, "--tmax", "0.25", "--agent-candidates", "8"}); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	want := solver.Spec{Master: "staged", NLP: "ipopt", Cuts: "stage", Eps: 0.002, EpsTol: 3e-6, TMin: 70 * time.Millisecond, TMax: 250 * time.Millisecond,
		AgentPatience: 4, AgentCandidates: 8, AgentPolish: true}
	if o.spec != want {
		t.Errorf("got %+v\nwant %+v", o.spec, want)
	}
	// A flag given over the file is checked with the file's other settings.
	o = solveOptions{}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	o.register(fs)
	if err := fs.Parse([]string{"--config", cfg, "--tmax", "50ms"}); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "--tmax 50ms: must not be below --tmin 70ms") {
		t.Errorf("tmax below the file's tmin: %v", err)
	}
}

// TestDurationFlags: a duration flag takes a duration or, as before it took units, seconds.
func TestDurationFlags(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want time.Duration
	}{{"0.8", 800 * time.Millisecond}, {"800ms", 800 * time.Millisecond}, {"1", time.Second}, {"2m", 2 * time.Minute}, {"0", 0}} {
		var o solveOptions
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.register(fs)
		if err := fs.Parse([]string{"--deadline", c.arg, "--tmin", c.arg}); err != nil || o.deadline != c.want || o.spec.TMin != c.want {
			t.Errorf("%s: deadline %v, tmin %v, %v; want %v", c.arg, o.deadline, o.spec.TMin, err, c.want)
		}
	}
	for _, bad := range []string{"soon", "NaN", "1e300", "5 s"} {
		var o solveOptions
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.register(fs)
		if err := fs.Parse([]string{"--deadline", bad}); err == nil {
			t.Errorf("--deadline %s accepted: %v", bad, o.deadline)
		}
	}
}
