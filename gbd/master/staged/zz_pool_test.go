package staged

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
	"slices"
	"strings"

	"gbdmpc/gbd"
	"gbdmpc/plant/pumpstation"
)

func TestZZPool(t *testing.T) {
	f := os.Getenv("ZZCUTS")
	if f == "" {
		t.Skip()
	}
	c, _ := pumpstation.SizedConfig(60)
	ypb, _ := pumpstation.Admissible(&c)
	b, _ := os.ReadFile(f)
	var cuts []gbd.Cut
	json.Unmarshal(b, &cuts)
	cutoff, _ := strconv.ParseFloat(os.Getenv("ZZCUTOFF"), 64)
	for _, n := range []int{len(cuts) / 2, len(cuts) - 1} {
		m := &Master{MaxPool: -1, Workers: 1}
		m.Reset(c.NY(), pumpstation.PureRows(&c), ypb)
		for k := range cuts[:n] {
			m.AddCut(&cuts[k])
		}
		t0 := time.Now()
		r, _ := m.Solve(0, nil)
		t1 := time.Since(t0)
		m.MaxPool = 1 << 26
		m.nodes = 0
		t0 = time.Now()
		ok := m.gather(cutoff, 0)
		fmt.Printf("n=%d opt=%.4f solve=%v nodes=%d | gather ok=%v pool=%d nodes=%d time=%v\n", n, r.Mu, t1.Round(time.Millisecond), m.Nodes, ok, len(m.poolMu), m.nodes, time.Since(t0).Round(time.Millisecond))
	}
}

func TestZZDepth(t *testing.T) {
	f := os.Getenv("ZZCUTS")
	if f == "" {
		t.Skip()
	}
	c, _ := pumpstation.SizedConfig(60)
	ypb, _ := pumpstation.Admissible(&c)
	b, _ := os.ReadFile(f)
	var cuts []gbd.Cut
	json.Unmarshal(b, &cuts)
	n := len(cuts) - 1
	m := &Master{MaxPool: -1, Workers: 1}
	m.Reset(c.NY(), pumpstation.PureRows(&c), ypb)
	for k := range cuts[:n] {
		m.AddCut(&cuts[k])
	}
		r, _ := m.Solve(0, nil)
	fmt.Println("opt", r.Mu, "root", m.RootBound, "nodes", m.Nodes)
}

func zzCombo(m *Master, lam map[int]float64) {
	sm := m.sm
	S := sm.Stages()
	sc := stagedCut{kind: gbd.OptimalityCut, val: make([][]float64, S), comp: make([][]float64, S)}
	for s := range S {
		sc.val[s] = make([]float64, sm.N(s))
	}
	for k, wt := range lam {
		c := &m.cuts[k]
		sc.konst += wt * c.konst
		for s := range S {
			for i := range sc.val[s] {
				sc.val[s][i] += wt * c.val[s][i]
			}
		}
	}
	m.complete(&sc)
	m.cuts = append(m.cuts, sc)
	k := len(m.cuts) - 1
	m.optOrder = append(m.optOrder, k)
	m.transpose(k)
	m.nOpt++
}

func TestZZCombo(t *testing.T) {
	f := os.Getenv("ZZCUTS")
	if f == "" {
		t.Skip()
	}
	top, _ := strconv.Atoi(os.Getenv("ZZTOP"))
	c, _ := pumpstation.SizedConfig(60)
	ypb, _ := pumpstation.Admissible(&c)
	b, _ := os.ReadFile(f)
	var cuts []gbd.Cut
	json.Unmarshal(b, &cuts)
	n := len(cuts) - 1
	m := &Master{MaxPool: -1, Workers: 1}
	m.Reset(c.NY(), pumpstation.PureRows(&c), ypb)
	for k := range cuts[:n] {
		m.AddCut(&cuts[k])
	}
	r, _ := m.Solve(0, nil)
	fmt.Println("base opt", r.Mu, "nodes", m.Nodes)
	// the cuts largest at the optimum
	path := append([]int(nil), m.best...)
	type kv struct {
		k int
		v float64
	}
	var vs []kv
	for k := range m.cuts {
		if m.cuts[k].kind == gbd.OptimalityCut {
			vs = append(vs, kv{k, m.cuts[k].valueAt(path)})
		}
	}
	for i := range vs {
		for j := i + 1; j < len(vs); j++ {
			if vs[j].v > vs[i].v {
				vs[i], vs[j] = vs[j], vs[i]
			}
		}
	}
	added := 0
	for i := 0; i < top && i < len(vs); i++ {
		for j := i + 1; j < top && j < len(vs); j++ {
			zzCombo(m, map[int]float64{vs[i].k: 0.5, vs[j].k: 0.5})
			added++
		}
	}
	m.last = nil
	t0 := time.Now()
	r, _ = m.Solve(0, nil)
	fmt.Println("combos", added, "opt", r.Mu, "nodes", m.Nodes, time.Since(t0))
}

func TestZZReverse(t *testing.T) {
	f := os.Getenv("ZZCUTS")
	if f == "" {
		t.Skip()
	}
	c, _ := pumpstation.SizedConfig(60)
	ypb0, _ := pumpstation.Admissible(&c)
	ypb := *ypb0
	ypb.Stages = slices.Clone(ypb0.Stages)
	slices.Reverse(ypb.Stages)
	b, _ := os.ReadFile(f)
	var cuts []gbd.Cut
	json.Unmarshal(b, &cuts)
	for k := range cuts {
		if t := cuts[k].Tables; t != nil {
			slices.Reverse(t.Stages)
			slices.Reverse(t.Excess)
		}
	}
	n := len(cuts) - 1
	m := &Master{MaxPool: -1, Workers: 1}
	if err := m.Reset(c.NY(), pumpstation.PureRows(&c), &ypb); err != nil {
		t.Fatal(err)
	}
	for k := range cuts[:n] {
		m.AddCut(&cuts[k])
	}
		t0 := time.Now()
	r, _ := m.Solve(0, nil)
	fmt.Println("reversed opt", r.Mu, "root", m.RootBound, "nodes", m.Nodes, time.Since(t0))
}

func zzRun(t *testing.T, size int, f string, n int, rev bool) (float64, int, time.Duration) {
	c, _ := pumpstation.SizedConfig(size)
	ypb0, _ := pumpstation.Admissible(&c)
	ypb := *ypb0
	ypb.Stages = slices.Clone(ypb0.Stages)
	b, _ := os.ReadFile(f)
	var cuts []gbd.Cut
	json.Unmarshal(b, &cuts)
	if rev {
		slices.Reverse(ypb.Stages)
		for k := range cuts {
			if t := cuts[k].Tables; t != nil {
				slices.Reverse(t.Stages)
				slices.Reverse(t.Excess)
			}
		}
	}
	if n <= 0 {
		n += len(cuts)
	}
	m := &Master{MaxPool: -1, Workers: 1}
	if err := m.Reset(c.NY(), pumpstation.PureRows(&c), &ypb); err != nil {
		t.Fatal(err)
	}
	for k := range cuts[:n] {
		m.AddCut(&cuts[k])
	}
	t0 := time.Now()
	r, _ := m.Solve(0, nil)
	return r.Mu, m.Nodes, time.Since(t0)
}

func TestZZBoth(t *testing.T) {
	fs := os.Getenv("ZZFILES")
	if fs == "" {
		t.Skip()
	}
	size, _ := strconv.Atoi(os.Getenv("ZZSIZE"))
	for _, f := range strings.Fields(fs) {
		for _, n := range []int{-1, -10, -20} {
			o1, n1, t1 := zzRun(t, size, f, n, false)
			o2, n2, t2 := zzRun(t, size, f, n, true)
			fmt.Printf("%s n=%d fwd %.4f %d %v | bwd %.4f %d %v | ratio %.2f\n", f, n, o1, n1, t1.Round(time.Millisecond), o2, n2, t2.Round(time.Millisecond), float64(t1)/float64(t2))
		}
	}
}
