package pumpstation

import (
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/master/enum"
)

// CountAdmissible's dynamic programme counts what the enumeration lists, and the reference sizes
// have the spec's binaries.
func TestCountAdmissible(t *testing.T) {
	for _, tc := range []struct {
		binaries int
		want     float64
	}{{12, 889}, {24, 119713}, {40, 26877816}, {60, 66516379291}} {
		c, err := SizedConfig(tc.binaries)
		if err != nil {
			t.Fatal(err)
		}
		if c.NY() != tc.binaries {
			t.Errorf("SizedConfig(%d) has %d binaries", tc.binaries, c.NY())
		}
		if got := CountAdmissible(&c); got != tc.want {
			t.Errorf("%d binaries: |Y_pb| = %v, want %v", tc.binaries, got, tc.want)
		}
		if tc.binaries > 24 {
			continue
		}
		a, err := gbd.EnumerateAdmissible(c.NY(), PureRows(&c), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if float64(a.Count()) != tc.want {
			t.Errorf("%d binaries: enumeration lists %d", tc.binaries, a.Count())
		}
	}
	for _, mut := range []func(*Config){
		func(c *Config) { c.Blocks, c.Horizon = 1, 4 },
		func(c *Config) { c.Blocks, c.Horizon = 2, 4 },
		func(c *Config) { c.MaxOn = 1 },
		func(c *Config) { c.MaxOn = 3; c.Blocks, c.Horizon = 5, 10 },
	} {
		c := DefaultConfig()
		mut(&c)
		a, err := gbd.EnumerateAdmissible(c.NY(), PureRows(&c), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if got := CountAdmissible(&c); got != float64(a.Count()) {
			t.Errorf("%d pumps × %d blocks, max %d on: count %v, enumeration %d", c.NP(), c.Blocks, c.MaxOn, got, a.Count())
		}
	}
	if _, err := SizedConfig(13); err == nil {
		t.Error("SizedConfig(13) accepted")
	}
}

// Beyond MaxEnumerate the family keeps Y_pb implicit, and GBD with the CBC master working from the
// rows finds what the enum master finds over the enumerated set: on the 24-binary station (119,713
// assignments) and on the default station, both forced implicit by a lower cap.
func TestImplicitSpaceMatchesEnumerated(t *testing.T) {
	prof := DefaultProfile()
	for _, tc := range []struct {
		binaries, instances int
		cap                 int
	}{{12, 4, 100}, {24, 1, 1 << 16}} {
		c, err := SizedConfig(tc.binaries)
		if err != nil {
			t.Fatal(err)
		}
		c.MaxEnumerate = tc.cap
		fam, err := NewFamily(c)
		if err != nil {
			t.Fatal(err)
		}
		imp := fam.Admissible()
		if !imp.Implicit() {
			t.Fatalf("%d binaries, cap %d: Y_pb enumerated", tc.binaries, tc.cap)
		}
		full, err := gbd.EnumerateAdmissible(c.NY(), PureRows(&c), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(tc.binaries), 9))
		in0 := Sample(rng, &c, &prof)
		if _, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(Problem(&c, &in0), imp, gbd.Settings{}); err == nil {
			t.Error("the enum master accepted an implicit Y_pb")
		}
		for i := range tc.instances {
			in := Sample(rng, &c, &prof)
			p := Problem(&c, &in)
			want, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, full, gbd.Settings{Eps: 1e-7})
			if err != nil {
				t.Fatal(err)
			}
			got, err := (&gbd.Engine{Master: &cbc.Master{}}).Solve(p, imp, gbd.Settings{Eps: 1e-7})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != want.Status {
				t.Fatalf("%d binaries, instance %d: implicit %v (%s), enumerated %v", tc.binaries, i, got.Status, got.Message, want.Status)
			}
			if want.Status == gbd.StatusOptimal && math.Abs(got.Objective-want.Objective) > 1e-6*(1+math.Abs(want.Objective)) {
				t.Errorf("%d binaries, instance %d: implicit %.9g, enumerated %.9g", tc.binaries, i, got.Objective, want.Objective)
			}
			if got.Status == gbd.StatusOptimal && !imp.Contains(got.Y) {
				t.Errorf("%d binaries, instance %d: y %v not admissible", tc.binaries, i, got.Y)
			}
			prev := math.Inf(-1)
			for _, it := range got.Trace {
				if it.LBD < prev-1e-9 || it.LBD > it.UBD+1e-6*(1+math.Abs(it.UBD)) {
					t.Errorf("%d binaries, instance %d, iteration %d: LBD %v (previous %v), UBD %v", tc.binaries, i, it.K, it.LBD, prev, it.UBD)
				}
				prev = it.LBD
			}
			t.Logf("%d binaries, instance %d: %d iterations (enumerated %d), objective %.6g", tc.binaries, i, got.Iterations, want.Iterations, got.Objective)
		}
	}
}
