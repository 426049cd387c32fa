package nlpsuite_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/nlp"
)

// BenchmarkBackends solves the suite's first 50 S(y) and F(y) of each family (and of the pump station's soft problem) with every back-end,
// one sub-benchmark per family, subproblem and back-end, so that one run sets the native solver
// beside Ipopt. It reports the median wall time per solve and allocations per solve.
func BenchmarkBackends(b *testing.B) {
	ps := pairs(50)
	for _, fam := range []string{"synthesis", "pumpstation", "pumpstation-soft"} {
		for _, feas := range []bool{false, true} {
			kind := map[bool]string{false: "S", true: "F"}[feas]
			type job struct {
				p  *nlp.Problem
				x0 []float64
			}
			var jobs []job
			for _, pr := range ps {
				if f, _, _ := strings.Cut(pr.name, "/"); f != fam {
					continue
				}
				sp := gbd.NewSubproblems(pr.p, nil, nlp.Options{})
				if p, x0, ok := sp.Compiled(pr.y, feas); ok {
					jobs = append(jobs, job{p, append([]float64(nil), x0...)})
				}
			}
			for _, name := range []string{"native", "ipopt"} {
				b.Run(fam+"/"+kind+"/"+name, func(b *testing.B) {
					s := backends[name]()
					for _, j := range jobs { // first sight of every structure
						s.Solve(j.p, j.x0, nlp.Options{})
					}
					var times []time.Duration
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						j := jobs[i%len(jobs)]
						i++
						t0 := time.Now()
						if _, err := s.Solve(j.p, j.x0, nlp.Options{}); err != nil {
							b.Fatal(err)
						}
						times = append(times, time.Since(t0))
					}
					slices.Sort(times)
					b.ReportMetric(float64(times[len(times)/2].Microseconds()), "median-µs")
				})
			}
		}
	}
}
