package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/agent"
	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/plant/synthesis"
)

func TestBenchSmall(t *testing.T) {
	oracle, _ := agent.NewBuiltin("oracle", 0)
	enum := func() gbd.Master { return &enum.Master{} }
	rep, err := Bench(context.Background(), BenchConfig{
		Family: synthesis.NewFamily(), Sample: synthesisSampler, Sets: 4, Seed: 2,
		Methods: []Method{
			{Name: "classical", NewMaster: func() gbd.Master { return &cbc.Master{} }},
			{Name: "oracle", Policy: oracle, NewMaster: enum},
		},
		Reference: "classical",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Methods {
		if m.Instances != 4 || m.Match != 4 || m.NotOptimal != 0 {
			t.Errorf("%s: %+v", m.Name, m)
		}
	}
	// The oracle's proposals are all used, but the one at the master step that closes the gap is
	// evaluated by nobody: it is final, not agent-selected.
	o := rep.Methods[1]
	if o.Proposed == 0 || o.AgentSelectedPct == 0 || math.Abs(o.AgentSelectedPct+o.FinalPct-100) > 1e-9 ||
		o.SolverSelectedPct+o.RepeatPct+o.InfeasiblePct != 0 {
		t.Errorf("oracle: proposed %d, agent-selected %.1f%%, final %.1f%%, solver %.1f%%, repeat %.1f%%, infeasible %.1f%%",
			o.Proposed, o.AgentSelectedPct, o.FinalPct, o.SolverSelectedPct, o.RepeatPct, o.InfeasiblePct)
	}
	if math.Abs(o.AgentSelected.Mean*float64(o.Instances)-o.AgentSelectedPct*float64(o.Proposed)/100) > 1e-9 {
		t.Errorf("oracle: %.3f agent-selected per instance over %d instances, %.1f%% of %d proposals", o.AgentSelected.Mean, o.Instances, o.AgentSelectedPct, o.Proposed)
	}
	if rep.Methods[0].MasterReduction != 0 {
		t.Errorf("reference reduction %g", rep.Methods[0].MasterReduction)
	}
	md := rep.Markdown()
	for _, want := range []string{"Iterations", "Master time reduction", "Solution match", "4/4"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	js, err := rep.JSON()
	if err != nil || !json.Valid(js) {
		t.Fatalf("JSON: %v", err)
	}
}

// TestCutsStudy runs the cut study small: on the 12-binary station every kind certifies every
// instance, the strengthened cuts in fewer iterations (median) than the classical ones and never
// more at worst, the stage cuts in no more than the strengthened ones (median), each with the
// hinges in no more than without them, and the figure is a PNG.
func TestCutsStudy(t *testing.T) {
	rows, err := Cuts(context.Background(), CutsConfig{Sizes: []int{12}, Instances: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || rows[0].Cuts != "classical" || rows[1].Cuts != NoHinges("strengthened") || rows[2].Cuts != NoHinges("stage") ||
		rows[3].Cuts != "strengthened" || rows[4].Cuts != "stage" || rows[0].Master != "enum" {
		t.Fatalf("rows: %+v", rows)
	}
	if rows[3].ItersP50 > rows[1].ItersP50 || rows[4].ItersP50 > rows[2].ItersP50 {
		t.Errorf("the hinges cost iterations: %+v", rows)
	}
	rows = slices.Delete(slices.Clone(rows), 1, 3) // classical, strengthened, stage (with hinges)
	for _, r := range rows {
		if r.Certified != r.Instances {
			t.Errorf("%s cuts certified %d of %d", r.Cuts, r.Certified, r.Instances)
		}
	}
	if rows[1].ItersP50 >= rows[0].ItersP50 || rows[1].ItersMax > rows[0].ItersMax {
		t.Errorf("strengthened cuts did not save iterations: %+v", rows)
	}
	if rows[2].ItersP50 > rows[1].ItersP50 {
		t.Errorf("stage cuts took more iterations than strengthened ones: %+v", rows)
	}
	var png bytes.Buffer
	if err := WriteCutsFigure(&png, rows); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Error("figure is not a PNG")
	}
}
