//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/plant/synthesis"
)

// decoded is a result line with nullable numbers.
type decoded struct {
	V         int       `json:"v"`
	Status    string    `json:"status"`
	Y         []float64 `json:"y"`
	Objective *float64  `json:"objective"`
	LBD       *float64  `json:"lbd"`
	UBD       *float64  `json:"ubd"`
	Algorithm string    `json:"algorithm"`
	Total     float64   `json:"total_seconds"`
	Message   string    `json:"message"`
}

// Three synthesis lines (a feasible instance, a malformed line, an infeasible instance) give three
// results in order, standard output holds nothing else, and the feasible one's objective and y
// are the enumerated optimum's.
func TestSolveLines(t *testing.T) {
	if testing.Short() {
		t.Skip("Bonmin solves of two synthesis instances")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	feasible := synthesis.SampleFeasible(rng)
	infeasible := synthesis.Sample(rng)
	infeasible.Rho = []float64{0.5, 0.5}
	input := string(synthesis.MarshalInstance(feasible)) + "\n{\"v\":1,\"gamma\":[1]}\n\n" + string(synthesis.MarshalInstance(infeasible)) + "\n"
	gt, err := gbd.SolveByEnumeration(synthesis.Problem(feasible), synthesis.Admissible(), nil, gbd.Settings{})
	if err != nil || !gt.Feasible {
		t.Fatalf("ground truth: %v, %+v", err, gt)
	}
	for _, alg := range []string{"bbb", "boa"} {
		var out, errOut bytes.Buffer
		if err := run([]string{"--plant", "synthesis", "--algorithm", alg, "--time-limit", "30s"}, strings.NewReader(input), &out, &errOut); err != nil {
			t.Fatalf("%s: %v (%s)", alg, err, errOut.String())
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("%s: %d result lines, want 3:\n%s", alg, len(lines), out.String())
		}
		var r [3]decoded
		for i, l := range lines {
			if err := json.Unmarshal([]byte(l), &r[i]); err != nil {
				t.Fatalf("%s: line %d %q: %v", alg, i, l, err)
			}
			if r[i].V != 1 || r[i].Total <= 0 {
				t.Errorf("%s: line %d: v %d, total_seconds %v", alg, i, r[i].V, r[i].Total)
			}
		}
		wantAlg := map[string]string{"bbb": "B-BB", "boa": "B-OA"}[alg]
		ok := r[0]
		if ok.Status != "optimal" || ok.Algorithm != wantAlg || ok.Objective == nil || ok.LBD == nil || ok.UBD == nil {
			t.Fatalf("%s: first line %+v", alg, ok)
		}
		if math.Abs(*ok.Objective-gt.Objective) > 1e-5*math.Abs(gt.Objective) || *ok.LBD > *ok.UBD+1e-6 {
			t.Errorf("%s: objective %v lbd %v, ground truth %v", alg, *ok.Objective, *ok.LBD, gt.Objective)
		}
		if len(ok.Y) != synthesis.NY || synthesis.Admissible().Index(ok.Y) != synthesis.Admissible().Index(gt.Y) {
			t.Errorf("%s: y %v, ground truth %v", alg, ok.Y, gt.Y)
		}
		if bad := r[1]; bad.Status != "error" || bad.Message == "" || bad.Objective != nil {
			t.Errorf("%s: malformed line gave %+v", alg, bad)
		}
		if inf := r[2]; inf.Status != "infeasible" || inf.UBD != nil || inf.Y != nil {
			t.Errorf("%s: infeasible instance gave %+v", alg, inf)
		}
	}
}

// --config builds the configured plant's family: configs/pumpstation-40.yaml is the 40-binary
// station (5 pumps, 8 blocks).
func TestConfigFamily(t *testing.T) {
	fam, err := family(options{config: "../../configs/pumpstation-40.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if fam.Name() != "pumpstation" || fam.Admissible().NY != 40 {
		t.Errorf("family %s with %d binaries, want pumpstation with 40", fam.Name(), fam.Admissible().NY)
	}
	if _, err := family(options{config: "../../configs/pumpstation-40.yaml", configPlant: "nosuch"}); err == nil {
		t.Error("unknown --config-plant accepted")
	}
	if _, err := family(options{configPlant: "pump1"}); err == nil {
		t.Error("--config-plant without --config accepted")
	}
	fam, err = family(options{plant: "synthesis"})
	if err != nil || fam.Admissible().NY != synthesis.NY {
		t.Errorf("--plant synthesis: %v", err)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--algorithm", "b-hyb"},
		{"--time-limit", "0s"},
		{"--plant", "nosuch"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		if err := run(args, strings.NewReader(""), &out, &errOut); err == nil {
			t.Errorf("%v accepted", args)
		}
		if out.Len() != 0 {
			t.Errorf("%v wrote results: %q", args, out.String())
		}
	}
}
