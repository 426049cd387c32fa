package solver

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
)

// TestDefaultsAreGBDs: the default spec stands for gbd's defaults, and every zero setting takes
// its default.
func TestDefaultsAreGBDs(t *testing.T) {
	set := DefaultSpec().Settings()
	if set.Eps != gbd.DefaultEps || set.EpsTol != gbd.DefaultEpsTol || set.TMin != gbd.DefaultTMin || set.TMax != gbd.DefaultTMax ||
		set.Patience != 0 || set.Candidates != 0 || set.Polish {
		t.Errorf("default settings %+v", set)
	}
	if got := (Spec{}).WithDefaults(); got != DefaultSpec() {
		t.Errorf("zero spec with defaults %+v, want %+v", got, DefaultSpec())
	}
	if errs := DefaultSpec().Problems(nil); len(errs) != 0 {
		t.Errorf("the defaults have problems: %v", errs)
	}
}

// TestProblems: each bad setting is reported once, named by its config key or by its flag.
func TestProblems(t *testing.T) {
	bad := Spec{Master: "highs", NLP: "mumps", Cuts: "benders", Eps: -1, EpsTol: -1e-9, TMin: time.Second, TMax: time.Millisecond,
		AgentPatience: -1, AgentCandidates: gbd.MaxCandidates + 1}
	for _, c := range []struct {
		name func(string) string
		want []string
	}{
		{nil, []string{`master "highs": want one of auto, enum, cbc, staged`, `nlp "mumps": want native or ipopt`,
			`cuts "benders": want one of strengthened, stage, classical`, "eps -1: must be a positive number", "eps_tol -1e-09: must be a non-negative number",
			"tmax 1ms: must not be below tmin 1s", "agent_patience -1: must not be negative", "agent_candidates 4097: must be at most 4096"}},
		{FlagName, []string{`--master "highs": want one of`, `--nlp "mumps"`, `--cuts "benders"`, "--eps -1:", "--eps-tol -1e-09:",
			"--tmax 1ms: must not be below --tmin 1s", "--agent-patience -1:", "--agent-candidates 4097:"}},
	} {
		errs := bad.Problems(c.name)
		if len(errs) != len(c.want) {
			t.Errorf("%d problems, want %d: %v", len(errs), len(c.want), errs)
			continue
		}
		for i, want := range c.want {
			if !strings.Contains(errs[i].Error(), want) {
				t.Errorf("problem %q, want %q", errs[i], want)
			}
		}
	}
	for kind, want := range map[string][2]bool{CutsStrengthened: {false, false}, CutsStage: {true, false}, CutsClassical: {false, true}} {
		set := Spec{Cuts: kind}.WithDefaults().Settings()
		if set.StageCuts != want[0] || set.ClassicalCuts != want[1] {
			t.Errorf("cuts %s: StageCuts %v ClassicalCuts %v", kind, set.StageCuts, set.ClassicalCuts)
		}
	}
	if d := DefaultSpec(); d.Cuts != CutsStrengthened {
		t.Errorf("default cuts %q", d.Cuts)
	}
	if errs := (Spec{TMin: -time.Second}).WithDefaults().Problems(nil); len(errs) != 1 || errs[0].Error() != "tmin -1s: must be positive" {
		t.Errorf("negative tmin: %v", errs)
	}
}

// TestFlags: every setting has a flag named after its key, with the spec's value as its default
// and its help from the spec; a subset registers only those; Over takes exactly the flags given.
func TestFlags(t *testing.T) {
	s := DefaultSpec()
	s.TMin = 50 * time.Millisecond
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	s.RegisterFlags(fs)
	st := reflect.TypeFor[Spec]()
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if f.Usage == "" {
			t.Errorf("--%s has no help", f.Name)
		}
	})
	if n != st.NumField() {
		t.Errorf("%d flags for %d settings", n, st.NumField())
	}
	for i := range st.NumField() {
		key := st.Field(i).Tag.Get("mapstructure")
		if fs.Lookup(strings.TrimPrefix(FlagName(key), "--")) == nil {
			t.Errorf("no flag for %s", key)
		}
	}
	if f := fs.Lookup("tmin"); f.DefValue != "50ms" {
		t.Errorf("--tmin default %s, want the spec's 50ms", f.DefValue)
	}
	if f := fs.Lookup("master"); !strings.Contains(f.Usage, "staged (") {
		t.Errorf("--master help does not list the masters: %s", f.Usage)
	}
	if err := fs.Parse([]string{"--tmax", "0.3", "--master", "cbc", "--agent-polish"}); err != nil {
		t.Fatal(err)
	}
	base := Spec{Master: "staged", NLP: "ipopt", Eps: 0.5, TMin: 10 * time.Millisecond, TMax: time.Second}
	got := s.Over(base, fs)
	want := Spec{Master: "cbc", NLP: "ipopt", Eps: 0.5, TMin: 10 * time.Millisecond, TMax: 300 * time.Millisecond, AgentPolish: true}
	if got != want {
		t.Errorf("over %+v\ngot  %+v\nwant %+v", base, got, want)
	}

	some := flag.NewFlagSet("t", flag.ContinueOnError)
	some.SetOutput(io.Discard)
	s.RegisterFlags(some, "nlp", "eps")
	if some.Lookup("nlp") == nil || some.Lookup("eps") == nil || some.Lookup("tmin") != nil {
		t.Error("a subset registered other flags")
	}
}
