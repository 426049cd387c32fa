package cbc

import (
	"math/rand"
	"sort"
	"syscall"
	"testing"
	"time"
)

// benchMasters are the BenchmarkMaster12x20 instances: 12 binaries plus a
// free-ish μ (≥ −1e6), 20 random optimality cuts, 4 group rows.
func benchMasters(n int) []*Problem {
	rng := rand.New(rand.NewSource(12))
	ps := make([]*Problem, n)
	for i := range ps {
		ps[i] = randomMaster(rng, 12, 20, 0).problem()
	}
	return ps
}

// benchSolve reports the median solve time besides Go's mean: a loaded
// machine produces long-tail outliers that dominate the mean.
func benchSolve(b *testing.B, opt Options) {
	ps := benchMasters(64)
	ds := make([]time.Duration, 0, b.N)
	var ru0, ru1 syscall.Rusage
	b.ReportAllocs()
	b.ResetTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r, err := Solve(ps[i%len(ps)], opt)
		ds = append(ds, time.Since(t0))
		if err != nil || r.Status != Optimal {
			b.Fatalf("status %v err %v", r.Status, err)
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	// CPU time is what other load on the machine disturbs least.
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, "p90-ms")
}

// BenchmarkMaster12x20 is the default path (PresetAuto → PresetTiny).
func BenchmarkMaster12x20(b *testing.B) { benchSolve(b, Options{}) }

// BenchmarkMaster12x20CBCDefaults is the "before" number: CBC's own
// defaults.
func BenchmarkMaster12x20CBCDefaults(b *testing.B) { benchSolve(b, Options{Preset: PresetCBC}) }

// BenchmarkMaster12x20Ablation puts back one CBC default at a time on top
// of PresetTiny, to show what each switch saves.
func BenchmarkMaster12x20Ablation(b *testing.B) {
	for i, drop := range tinyParams {
		var prm []Param
		prm = append(prm, tinyParams[:i]...)
		prm = append(prm, tinyParams[i+1:]...)
		b.Run(drop.Name+"=default", func(b *testing.B) {
			benchSolve(b, Options{Preset: PresetCBC, Params: prm})
		})
	}
}
