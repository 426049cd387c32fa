package mpc_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gbdmpc/backend"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// BenchmarkParallelPlants steps N pump-station controllers at once, one goroutine each, as a
// daemon serving N plants does, with each NLP back-end: the steps per second of all plants
// together, beside the same for one plant. Ipopt serialises every NLP of the process behind one
// lock; the native back-end has none, so on a machine with c cores N ≥ c plants can reach c times
// the rate of one plant stepping on one core.
func BenchmarkParallelPlants(b *testing.B) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	c, prof := fam.Config(), pumpstation.DefaultProfile()
	cores := runtime.GOMAXPROCS(0)
	for _, name := range []string{"native", "ipopt"} {
		mk, _ := backend.NLPByName(name)
		for _, run := range []struct {
			plants, workers int
		}{
			// One plant re-evaluates its carried cuts on every core (the daemon's choice for a
			// lone plant), and on one: the rate of a step that runs on one core, the unit that N
			// plants on c cores can reach c times without a lock. Four plants share the cores out
			// for that re-evaluation as the daemon does (controller's mpcOptions).
			{1, cores}, {1, 1}, {4, max(1, cores/4)},
		} {
			n := run.plants
			b.Run(fmt.Sprintf("%s/plants=%d/carry-workers=%d", name, n, run.workers), func(b *testing.B) {
				ctls := make([]*mpc.Controller, n)
				for i := range ctls {
					if ctls[i], err = mpc.NewController(fam, mpc.Options{NLP: mk(), CarryWorkers: run.workers}); err != nil {
						b.Fatal(err)
					}
				}
				// Each plant steps on its own, as in the daemon (no barrier between plants: a round
				// that waited for the slowest of four would measure the spread of step times, not
				// the throughput). b.N steps per plant in all.
				var next atomic.Int64
				total := int64(b.N) * int64(n)
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for i, ctl := range ctls {
					wg.Go(func() {
						for {
							k := next.Add(1)
							if k > total {
								return
							}
							rng := rand.New(rand.NewPCG(uint64(i), uint64(k)))
							m, err := fam.Measure(pumpstation.SampleAt(rng, &c, &prof, 24*rng.Float64()))
							if err != nil {
								b.Error(err)
								return
							}
							if _, err := ctl.Step(m, time.Time{}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				steps := total
				b.ReportMetric(float64(steps)/time.Since(start).Seconds(), "steps/s")
			})
		}
	}
}
