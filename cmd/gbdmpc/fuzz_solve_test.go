package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
)

// FuzzSolveLine feeds arbitrary lines to the `gbdmpc solve` line handler with the enum master and
// a deadline of one microsecond, so that an accepted line stops before its first NLP and every
// execution stays fast. Properties (specs/interfaces.md §1): a result always comes back, with
// "v":1 and one of the documented statuses; an error result carries a message; the result encodes
// as one JSON line.
func FuzzSolveLine(f *testing.F) {
	f.Add(false, []byte(`{"v":1,"gamma":[10,20,15,12,4],"U":10,"rho":[1.5,0.5]}`))
	f.Add(false, []byte(`{"v":1,"gamma":[5,5,5,5,5],"U":8,"rho":[0.2,0.3]}`))
	f.Add(false, []byte(`{"v":1,"gamma":[10,20,15,12],"U":10,"rho":[1.5,0.5]}`))
	f.Add(false, []byte(`{"v":1,"gamma":[10,20,15,12,4],"U":10,"rho":[1.5,0.5]}]`))
	f.Add(false, []byte(`not json`))
	f.Add(true, []byte(`{"v":1,"level_m":3,"pumps_on":[0,1,0],"demand_m3h":[80,80,80,80,80,80,80,80,80,80,80,80,80,80,80,80],"price_eur_kwh":[0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2]}`))
	f.Add(true, []byte(`{"v":1,"level_m":3,"pumps_on":[0,1,0],"demand_m3h":[80],"price_eur_kwh":[0.2]}`))
	f.Add(true, []byte(`{"v":1,"level_m":-7,"pumps_on":[2,1,0]}`))
	solvers := map[bool]*lineSolver{}
	for _, pump := range []bool{false, true} {
		name := "synthesis"
		if pump {
			name = "pumpstation"
		}
		fam, err := familyByName(name)
		if err != nil {
			f.Fatal(err)
		}
		solvers[pump] = &lineSolver{fam: fam, engine: gbd.Engine{Master: &enum.Master{}}, deadline: time.Microsecond}
	}
	f.Fuzz(func(t *testing.T, pump bool, line []byte) {
		if len(line) > 4<<10 {
			return
		}
		start := time.Now()
		r := solvers[pump].solveLine(context.Background(), line, start)
		if r == nil {
			t.Fatal("no result")
		}
		if r.V != 1 {
			t.Fatalf("result v = %d", r.V)
		}
		switch r.Status {
		case "optimal", "gap", "infeasible":
		case "error":
			if r.Message == "" {
				t.Fatal("error result without a message")
			}
		default:
			t.Fatalf("status %q is not a documented one", r.Status)
		}
		for _, y := range r.Y {
			if y != 0 && y != 1 {
				t.Fatalf("y has a non-binary value %v", y)
			}
		}
		if r.Status == "optimal" && (math.IsNaN(float64(r.LBD)) || float64(r.LBD) > float64(r.UBD)) {
			t.Fatalf("optimal with lbd %v, ubd %v", r.LBD, r.UBD)
		}
		var buf bytes.Buffer
		if err := writeResult(&buf, r, start); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		out := buf.Bytes()
		if bytes.Count(out, []byte("\n")) != 1 || !json.Valid(out) {
			t.Fatalf("result is not one JSON line: %q", out)
		}
	})
}
