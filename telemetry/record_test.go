package telemetry

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestNumJSON(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		json string
	}{
		{math.Inf(1), `"+Inf"`},
		{math.Inf(-1), `"-Inf"`},
		{math.NaN(), `null`},
		{0, `0`},
		{-1.5, `-1.5`},
		{1e300, `1e+300`},
		{5e-324, `5e-324`},
		{0.1, `0.1`},
	} {
		b, err := json.Marshal(Num(tc.in))
		if err != nil {
			t.Fatalf("marshal %v: %v", tc.in, err)
		}
		if string(b) != tc.json {
			t.Errorf("marshal %v = %s, want %s", tc.in, b, tc.json)
		}
		var n Num
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if !sameFloat(float64(n), tc.in) {
			t.Errorf("round trip of %v gave %v", tc.in, n)
		}
	}
	var n Num
	if err := json.Unmarshal([]byte(`"NaN"`), &n); err != nil || !math.IsNaN(float64(n)) {
		t.Errorf(`"NaN" decoded as %v, %v`, n, err)
	}
	for _, bad := range []string{`"inf"`, `"1"`, `true`, `{}`, `1e999`} {
		if err := json.Unmarshal([]byte(bad), &n); err == nil {
			t.Errorf("%s decoded without error as %v", bad, n)
		}
	}
	// Inside a struct, null must reach UnmarshalJSON and mean NaN rather than leave the field as is.
	var s struct{ X Num }
	s.X = 7
	if err := json.Unmarshal([]byte(`{"X":null}`), &s); err != nil || !math.IsNaN(float64(s.X)) {
		t.Errorf("null field decoded as %v, %v", s.X, err)
	}
}

// sameFloat compares floats that went through JSON: non-finite values by class, finite ones within a
// relative tolerance (the formatting round-trips exactly, the tolerance only keeps the test honest
// about what it claims).
func sameFloat(a, b float64) bool {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.IsNaN(a) && math.IsNaN(b)
	case math.IsInf(a, 0) || math.IsInf(b, 0):
		return a == b
	}
	return math.Abs(a-b) <= 1e-15*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestRoundTripEveryField writes records with every field set, non-finite values included, and reads
// them back field by field.
func TestRoundTripEveryField(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, LogOptions{}, newFakeClock())
	m := &Record{
		V: SchemaVersion, Type: TypeMaster, TSms: 1772366400123, Plant: "p1", Family: "synthesis",
		SolveID: "s1", Step: 42, PolicyVersion: "pv7",
		Master: &MasterRecord{
			Iter: 3, NY: 2, YpbSignature: "abc", YpbCount: 3,
			Cuts: []CutRecord{
				{Kind: CutOptimality, Coef: []float64{1.25, -2}, Const: 0.5, Iter: 1},
				{Kind: CutFeasibility, Coef: []float64{0, 1e-9}, Const: -3, Iter: -1, Carried: true},
			},
			Prev:     []float64{0, 1},
			Instance: json.RawMessage(`{"a":[1,2],"b":"x"}`),
			Proposal: &ProposalRecord{
				Index: -1, Y: []float64{1, 1},
				Probs:   []Num{0.9, Num(math.NaN())},
				Logits:  []Num{Num(math.Inf(-1)), 2, Num(math.Inf(1))},
				Outcome: OutcomeInfeasible,
			},
			TkSeconds: 0.125, LBD: Num(math.Inf(-1)), UBD: Num(math.Inf(1)), MasterSeconds: 0.003,
			MasterStatus: "optimal", MasterY: []float64{1, 0}, MasterMu: Num(math.NaN()),
			MasterBound: -7.5, Chosen: []float64{1, 0},
		},
	}
	s := &Record{
		V: SchemaVersion, Type: TypeSolve, TSms: 1772366400999, Plant: "p1", Family: "pumpstation",
		SolveID: "s1", Step: 42, PolicyVersion: "pv7",
		Solve: &SolveRecord{
			Status: "gap_at_deadline", Y: []float64{1, 0}, Objective: Num(math.Inf(1)),
			LBD: Num(math.Inf(-1)), UBD: Num(math.NaN()), Iterations: 9,
			MasterSeconds: 0.5, SubproblemSeconds: 1.5, TotalSeconds: 2.25,
			Agent:    &AgentStats{Proposed: 4, Feasible: 3, Accepted: 2, SolverSelected: 1},
			Instance: json.RawMessage(`{"pumps":2}`), Message: "deadline",
		},
	}
	writeAll(t, l, []*Record{m, s})
	mustClose(t, l)

	got, _ := readAll(t, dir)
	if len(got) != 2 {
		t.Fatalf("read %d records, want 2", len(got))
	}
	gm, gs := got[0], got[1]
	if gm.V != SchemaVersion || gm.Type != TypeMaster || gm.TSms != m.TSms || gm.Plant != "p1" || gm.Family != "synthesis" ||
		gm.SolveID != "s1" || gm.Step != 42 || gm.PolicyVersion != "pv7" || gm.Solve != nil {
		t.Errorf("master header = %+v", gm)
	}
	mm := gm.Master
	if mm.Iter != 3 || mm.NY != 2 || mm.YpbSignature != "abc" || mm.YpbCount != 3 || mm.MasterStatus != "optimal" {
		t.Errorf("master scalars = %+v", mm)
	}
	if len(mm.Cuts) != 2 || mm.Cuts[1].Kind != CutFeasibility || !mm.Cuts[1].Carried || mm.Cuts[1].Iter != -1 ||
		mm.Cuts[0].Carried || mm.Cuts[0].Iter != 1 {
		t.Errorf("cuts = %+v", mm.Cuts)
	}
	checkFloats(t, "cut 0 coef", mm.Cuts[0].Coef, []float64{1.25, -2})
	checkFloats(t, "cut 1 coef", mm.Cuts[1].Coef, []float64{0, 1e-9})
	checkFloats(t, "cut consts", []float64{mm.Cuts[0].Const, mm.Cuts[1].Const}, []float64{0.5, -3})
	checkFloats(t, "prev", mm.Prev, []float64{0, 1})
	if string(mm.Instance) != `{"a":[1,2],"b":"x"}` {
		t.Errorf("instance = %s", mm.Instance)
	}
	p := mm.Proposal
	if p == nil || p.Index != -1 || p.Outcome != OutcomeInfeasible {
		t.Fatalf("proposal = %+v", p)
	}
	checkFloats(t, "proposal y", p.Y, []float64{1, 1})
	checkFloats(t, "probs", numsToFloats(p.Probs), []float64{0.9, math.NaN()})
	checkFloats(t, "logits", numsToFloats(p.Logits), []float64{math.Inf(-1), 2, math.Inf(1)})
	checkFloats(t, "master nums",
		numsToFloats([]Num{mm.TkSeconds, mm.LBD, mm.UBD, mm.MasterMu, mm.MasterBound}),
		[]float64{0.125, math.Inf(-1), math.Inf(1), math.NaN(), -7.5})
	checkFloats(t, "master seconds", []float64{mm.MasterSeconds}, []float64{0.003})
	checkFloats(t, "master y", mm.MasterY, []float64{1, 0})
	checkFloats(t, "chosen", mm.Chosen, []float64{1, 0})

	if gs.Type != TypeSolve || gs.Family != "pumpstation" || gs.Master != nil || gs.Solve == nil {
		t.Fatalf("solve record = %+v", gs)
	}
	ss := gs.Solve
	if ss.Status != "gap_at_deadline" || ss.Iterations != 9 || ss.Message != "deadline" ||
		string(ss.Instance) != `{"pumps":2}` || ss.Agent == nil || *ss.Agent != *s.Solve.Agent {
		t.Errorf("solve = %+v", ss)
	}
	checkFloats(t, "solve y", ss.Y, []float64{1, 0})
	checkFloats(t, "solve nums", numsToFloats([]Num{ss.Objective, ss.LBD, ss.UBD}),
		[]float64{math.Inf(1), math.Inf(-1), math.NaN()})
	checkFloats(t, "solve seconds", []float64{ss.MasterSeconds, ss.SubproblemSeconds, ss.TotalSeconds},
		[]float64{0.5, 1.5, 2.25})

	// The keys on disk are the documented snake_case ones.
	raw := string(readFile(t, filepath.Join(dir, segmentName(1, false))))
	for _, key := range []string{`"v":2`, `"ts_ms"`, `"solve_id"`, `"policy_version"`, `"ypb_signature"`,
		`"ypb_count"`, `"tk_seconds"`, `"master_seconds"`, `"master_status"`, `"master_y"`, `"master_mu"`,
		`"master_bound"`, `"subproblem_seconds"`, `"total_seconds"`, `"solver_selected"`, `"lbd":"-Inf"`,
		`"master_mu":null`} {
		if !strings.Contains(raw, key) {
			t.Errorf("segment lacks %s", key)
		}
	}
}

func numsToFloats(ns []Num) []float64 {
	out := make([]float64, len(ns))
	for i, n := range ns {
		out[i] = float64(n)
	}
	return out
}

func checkFloats(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if !sameFloat(got[i], want[i]) {
			t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestValidate(t *testing.T) {
	good := func() *Record {
		return &Record{V: SchemaVersion, Type: TypeMaster, Master: &MasterRecord{NY: 2, Cuts: []CutRecord{
			{Kind: CutOptimality, Coef: []float64{1, 2}},
		}}}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("valid record: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(r *Record)
		want   string
	}{
		{"unknown type", func(r *Record) { r.Type = "step" }, "unknown record type"},
		{"no payload", func(r *Record) { r.Master = nil }, "without a master payload"},
		{"solve without payload", func(r *Record) { r.Type = TypeSolve }, "without a solve payload"},
		{"ny zero", func(r *Record) { r.Master.NY = 0 }, "ny=0"},
		{"coef length", func(r *Record) { r.Master.Cuts[0].Coef = []float64{1} }, "1 coefficients, want ny=2"},
		{"nan coef", func(r *Record) { r.Master.Cuts[0].Coef[1] = math.NaN() }, "coefficient 1 is NaN"},
		{"inf coef", func(r *Record) { r.Master.Cuts[0].Coef[0] = math.Inf(1) }, "coefficient 0 is +Inf"},
		{"inf const", func(r *Record) { r.Master.Cuts[0].Const = math.Inf(-1) }, "constant is -Inf"},
		{"cut kind", func(r *Record) { r.Master.Cuts[0].Kind = "benders" }, `unknown kind "benders"`},
		{"cuts_from", func(r *Record) { r.Master.CutsFrom = -1 }, "cuts_from=-1"},
	} {
		r := good()
		tc.mutate(r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestWriterRejectsInvalid checks that what the reader would refuse never reaches the file.
func TestWriterRejectsInvalid(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, LogOptions{}, newFakeClock())
	bad := solveRecord(0)
	bad.Solve.Y = []float64{math.NaN()} // encoding/json cannot write it
	wrongVersion := solveRecord(1)
	wrongVersion.V = SchemaVersion + 1
	first := masterRecord(newRand(3), 0, 2, 3)
	noPayload := &Record{Type: TypeMaster, SolveID: first.SolveID}
	// Valid records first: the others then meet an open segment and a solve whose master records
	// they could continue.
	for _, r := range []*Record{solveRecord(2), first, bad, wrongVersion, noPayload} {
		l.Write(r)
	}
	if l.Write(nil) {
		t.Error("Write(nil) = true")
	}
	mustClose(t, l)
	if got := l.Rejected(); got != 4 {
		t.Errorf("Rejected() = %d, want 4", got)
	}
	got, _ := readAll(t, dir)
	assertRecords(t, got, []*Record{solveRecord(2), first})
}
