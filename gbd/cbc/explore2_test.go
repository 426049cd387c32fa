package cbc

import (
	"fmt"
	"math/rand"
	"os"
	"testing"
	"time"
)

func TestExploreInfeasBug(t *testing.T) {
	if os.Getenv("CBC_BUG") == "" {
		t.Skip()
	}
	rng := rand.New(rand.NewSource(7))
	var ks []*mkp
	for i := 0; i < 60; i++ {
		ks = append(ks, randomMKP(rng, 20, 3))
	}
	for _, extra := range [][]Param{nil, {{"preprocess", "off"}}, {{"cuts", "off"}}, {{"heur", "off"}}, {{"presolve", "off"}}} {
		for _, tl := range []time.Duration{time.Nanosecond, 300 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond} {
			bad := 0
			for rep := 0; rep < 3; rep++ {
				for _, k := range ks {
					r, _ := Solve(k.problem(), Options{Preset: PresetCBC, TimeLimit: tl, Params: extra})
					if r.Status == Infeasible {
						bad++
						if bad == 1 {
							fmt.Printf("   raw %+v nodes %d\n", r.Raw, r.Nodes)
						}
					}
				}
			}
			fmt.Printf("%v %v: infeasible %d/180\n", extra, tl, bad)
		}
	}
}
