package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSolveModelPlant: `solve --config` with the pump station written as a model gives the
// built-in family's optimum and y for the same instance, written by the model's names; a line the
// model refuses gets an error result naming the member, and the others are still solved.
func TestSolveModelPlant(t *testing.T) {
	demand := `[60,60,60,60,70,70,70,70,90,90,90,90,80,80,80,80]`
	price := `[0.12,0.12,0.12,0.12,0.12,0.12,0.35,0.35,0.35,0.35,0.35,0.35,0.12,0.12,0.12,0.12]`
	builtin := `{"v":1,"level_m":3.0,"pumps_on":[0,1,0],"demand_m3h":` + demand + `,"price_eur_kwh":` + price + `}` + "\n"
	model := `{"v":1,"level_m":3.0,"p1":0,"p2":1,"p3":0,"demand_m3h":` + demand + `,"price_eur_kwh":` + price + `}` + "\n"
	out, stderr, code := runCLI(t, builtin, "solve", "--plant", "pumpstation", "--master", "enum", "--eps", "1e-7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := parseResults(t, out)
	bad := strings.Replace(model, `"p2":1`, `"p2":2`, 1)
	out, stderr, code = runCLI(t, model+bad+model, "solve", "--config", "../../configs/pumpstation-model.yaml", "--master", "enum", "--eps", "1e-7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := parseResults(t, out)
	if len(got) != 3 || len(want) != 1 || want[0].Objective == nil {
		t.Fatalf("results %+v and %+v", got, want)
	}
	for _, i := range []int{0, 2} {
		r := got[i]
		if r.Status != "optimal" || r.Objective == nil || math.Abs(*r.Objective-*want[0].Objective) > 1e-6*math.Abs(*want[0].Objective) {
			t.Errorf("line %d: %+v, built-in %v", i, r, *want[0].Objective)
			continue
		}
		for k := range r.Y {
			if r.Y[k] != want[0].Y[k] {
				t.Errorf("line %d: y %v, built-in %v", i, r.Y, want[0].Y)
				break
			}
		}
	}
	if got[1].Status != "error" || !strings.Contains(got[1].Message, `"p2" = 2, want 0 or 1`) {
		t.Errorf("refused line: %+v", got[1])
	}
}

// TestSimulateModelPlant: `simulate --config` closes the loop of a model written inline in a
// config and writes a CSV row per step by the model's names, a summary without fallbacks, and
// the decision log of its steps.
func TestSimulateModelPlant(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	out, stderr, code := runCLI(t, "", "simulate", "--config", "../../plant/registry/testdata/inline.yaml", "--steps", "3", "--out", dir, "--master", "enum",
		"--decision-log", logDir, "--plant-id", "tank")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `"optimal": 3`) {
		t.Errorf("summary:\n%s", out)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "steps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[0], ",level,q,pump,demand") {
		t.Errorf("steps.csv:\n%s", csv)
	}
	segs, _ := filepath.Glob(filepath.Join(logDir, "decisions-*.jsonl"))
	if len(segs) != 1 {
		t.Fatalf("decision log segments %v", segs)
	}
	logged, err := os.ReadFile(segs[0])
	if err != nil || !strings.Contains(string(logged), `"family":"model"`) || !strings.Contains(string(logged), `"level":`) {
		t.Errorf("decision log does not hold the model plant's steps (%v): %.300s", err, logged)
	}
}
