package replay

import (
	"context"
	"testing"

	"gbdmpc/mpc"
	"gbdmpc/telemetry"
)

// BenchmarkReplay measures replay throughput — reading, rebuilding and exactly labelling logged master
// problems — in master problems per second, on a synthesis log (|Y_pb| = 12) and a pump-station log
// (|Y_pb| = 889, where labelling dominates). Writing the logs runs GBD and is not timed.
func BenchmarkReplay(b *testing.B) {
	ps, pumps := pumpInstances(b, 31, 4)
	for _, bc := range []struct {
		name string
		fam  mpc.Family
		spec logSpec
	}{
		{"synthesis", synthesisFamily(), logSpec{plant: "s1", family: synthesisFamily(), instances: synthesisInstances(41, 20, false), starts: 4}},
		{"pumpstation", ps, logSpec{plant: "p1", family: ps, instances: pumps}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			writeLog(b, dir, telemetry.LogOptions{MaxSegmentBytes: 256 << 10, Compress: true}, bc.spec)
			masters := 0
			for b.Loop() {
				d, err := Read(context.Background(), Options{Family: bc.fam}, dir)
				if err != nil {
					b.Fatal(err)
				}
				masters = d.Stats.Masters
			}
			b.ReportMetric(float64(masters)*float64(b.N)/b.Elapsed().Seconds(), "masters/s")
			b.ReportMetric(float64(masters), "masters/op")
		})
	}
}
