package experiment

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/plant/synthesis"
)

func TestBenchSmall(t *testing.T) {
	oracle, _ := gbd.NewBuiltin("oracle", 0)
	enum := func() gbd.Master { return &gbd.EnumMaster{} }
	rep, err := Bench(context.Background(), BenchConfig{
		Family: synthesis.NewFamily(), Sample: synthesisSampler, Sets: 4, Seed: 2,
		Methods: []Method{
			{Name: "classical", NewMaster: func() gbd.Master { return &gbd.CBCMaster{} }},
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
	if o := rep.Methods[1]; o.Proposed == 0 || o.AgentSelectedPct != 100 {
		t.Errorf("oracle: proposed %d, agent-selected %.1f%%, want 100%%", o.Proposed, o.AgentSelectedPct)
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
