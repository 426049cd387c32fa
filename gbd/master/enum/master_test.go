package enum

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/gbdtest"
)

// On a Y_pb large enough for the byte-table scan, the enum master's optimum is the brute-force
// minimum of the cuts' maximum over the admissible assignments that the feasibility cuts allow.
func TestTableScan(t *testing.T) {
	ny := 14
	row := gbd.PureRow{RHS: 7}
	for i := range ny {
		row.Idx, row.Coef = append(row.Idx, i), append(row.Coef, 1)
	}
	ypb, err := gbd.EnumerateAdmissible(ny, []gbd.PureRow{row}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if ypb.Count() < tableScanMin {
		t.Fatalf("only %d assignments", ypb.Count())
	}
	rng := rand.New(rand.NewPCG(5, 5))
	m := &Master{}
	if err := m.Reset(ny, nil, ypb); err != nil {
		t.Fatal(err)
	}
	var cuts []gbd.Cut
	for k := range 12 {
		c := gbd.Cut{Kind: gbd.OptimalityCut, Const: rng.NormFloat64(), Coef: make([]float64, ny)}
		if k%4 == 3 {
			c.Kind, c.Const = gbd.FeasibilityCut, -2
		}
		for i := range c.Coef {
			c.Coef[i] = rng.NormFloat64()
		}
		cuts = append(cuts, c)
		m.AddCut(&cuts[len(cuts)-1])
		got, err := m.Solve(0, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, best := gbdtest.BruteMaster(ypb, cuts)
		if got.Status != gbd.MasterOptimal || math.Abs(got.Mu-best) > 1e-12*(1+math.Abs(best)) {
			t.Fatalf("after %d cuts: %v μ=%v, brute force %v", k+1, got.Status, got.Mu, best)
		}
		if math.Abs(gbd.MaxOptimality(cuts, got.Y)-got.Mu) > 1e-12*(1+math.Abs(best)) || !gbd.SatisfiesFeasibilityCuts(cuts, got.Y) {
			t.Fatalf("after %d cuts: y %v does not have μ %v", k+1, got.Y, got.Mu)
		}
	}
}

// BenchmarkAddCut is one optimality cut added to the pump stations' Y_pb shapes (at most
// two pumps per block, the minimum up-time rule): 3 pumps × 4 blocks (889 assignments) and 4 pumps ×
// 6 blocks (119,713), each with the per-assignment pass and with the byte-table scan.
func BenchmarkAddCut(b *testing.B) {
	for _, sz := range []struct{ np, nb int }{{3, 4}, {4, 6}} {
		np, nb := sz.np, sz.nb
		rows, _ := gbdtest.PumpRows(np, nb)
		ypb, err := gbd.EnumerateAdmissible(np*nb, rows, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		c := gbd.Cut{Kind: gbd.OptimalityCut, Coef: make([]float64, ypb.NY)}
		for i := range c.Coef {
			c.Coef[i] = rng.NormFloat64()
		}
		for _, scan := range []string{"pass", "table"} {
			b.Run(fmt.Sprintf("binaries=%d/%s", ypb.NY, scan), func(b *testing.B) {
				m := &Master{}
				if err := m.Reset(ypb.NY, rows, ypb); err != nil {
					b.Fatal(err)
				}
				masks := ypb.Masks()
				for b.Loop() {
					if scan == "table" {
						m.addCutTable(&c, masks, m.target(&c, false))
					} else {
						m.addCutPass(&c, m.target(&c, false))
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(ypb.Count()), "ns/assignment")
			})
		}
	}
}
