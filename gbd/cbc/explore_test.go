package cbc

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExplore(t *testing.T) {
	spec := os.Getenv("CBC_EXPLORE")
	if spec == "" {
		t.Skip()
	}
	ps := benchMasters(64)
	if sz := os.Getenv("CBC_SIZE"); sz != "" {
		var ny, nc int
		fmt.Sscan(sz, &ny, &nc)
		rng := rand.New(rand.NewSource(5))
		for i := range ps {
			ps[i] = randomMaster(rng, ny, nc, 0).problem()
		}
	}
	if os.Getenv("CBC_TRIVIAL") != "" {
		for i := range ps {
			ps[i] = &Problem{NumCols: 1, ColLB: []float64{0}, ColUB: []float64{1}, Obj: []float64{-1}, Integer: []bool{true}}
		}
	}
	var cpu0, cpu1 syscall.Rusage
	for _, set := range strings.Split(spec, ";") {
		var prm []Param
		f := strings.Fields(set)
		for i := 0; i+1 < len(f); i += 2 {
			prm = append(prm, Param{f[i], f[i+1]})
		}
		iters := 200
		if v := os.Getenv("CBC_ITERS"); v != "" {
			fmt.Sscan(v, &iters)
		}
		var ds []time.Duration
		syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
		nodes := 0
		for i := 0; i < iters; i++ {
			t0 := time.Now()
			r, err := Solve(ps[i%len(ps)], Options{Preset: PresetCBC, Params: prm})
			ds = append(ds, time.Since(t0))
			if err != nil || (r.Status != Optimal && os.Getenv("CBC_ANY") == "") {
				t.Fatalf("%v %v", r.Status, err)
			}
			nodes += r.Nodes
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
		cpu := time.Duration(cpu1.Utime.Nano()+cpu1.Stime.Nano()-cpu0.Utime.Nano()-cpu0.Stime.Nano()) / time.Duration(iters)
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		fmt.Printf("%-75s median %7.3fms p90 %7.3fms cpu/solve %7.3fms nodes %.1f\n", set, ds[len(ds)/2].Seconds()*1e3, ds[len(ds)*9/10].Seconds()*1e3, cpu.Seconds()*1e3, float64(nodes)/float64(iters))
	}
}
