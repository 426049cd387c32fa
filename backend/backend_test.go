package backend_test

import (
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipopt"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/solver"
)

// TestNLPByName: both back-ends resolve ("" is the native one), an unknown name is refused with the known ones.
func TestNLPByName(t *testing.T) {
	for _, name := range append([]string{""}, backend.NLPNames...) {
		mk, err := backend.NLPByName(name)
		if err != nil || mk() == nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	if _, ok := mustNLP(t, "")().(*ipopt.Rescued); !ok {
		t.Error(`"" is not the native back-end`)
	}
	if _, err := backend.NLPByName("mumps"); err == nil || !strings.Contains(err.Error(), "native") {
		t.Errorf("unknown back-end: %v", err)
	}
}

// TestEveryNameMakesItsBackend: each back-end the solver spec can name is made here, and is the
// one named.
func TestEveryNameMakesItsBackend(t *testing.T) {
	for _, name := range solver.MasterNames {
		if name == backend.AutoMasterName {
			continue
		}
		mk, err := backend.MasterByName(name)
		if err != nil || mk().Name() != name {
			t.Errorf("master %s: %v", name, err)
		}
	}
	for _, name := range solver.NLPNames {
		if mk, err := backend.NLPByName(name); err != nil || mk() == nil {
			t.Errorf("NLP %s: %v", name, err)
		}
	}
}

// TestNativeBackendClosedLoop: with the native back-end the pump station's steps are solved
// natively (no Ipopt rescue) to the same objective as with Ipopt: servable steps, and a capacity
// shortfall, whose relaxed plan comes from the soft problem.
func TestNativeBackendClosedLoop(t *testing.T) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := fam.Config()
	mk, _ := backend.NLPByName("native")
	native := mk().(*ipopt.Rescued)
	ctlN, err := mpc.NewController(fam, mpc.Options{NLP: native})
	if err != nil {
		t.Fatal(err)
	}
	mkI, _ := backend.NLPByName("ipopt")
	ctlI, err := mpc.NewController(fam, mpc.Options{NLP: mkI()})
	if err != nil {
		t.Fatal(err)
	}
	for _, demand := range []float64{120, 150, 90} {
		m, err := fam.Measure(testsupport.PumpInstance(&c, 3, demand))
		if err != nil {
			t.Fatal(err)
		}
		dn, errN := ctlN.Step(m, time.Time{})
		di, errI := ctlI.Step(m, time.Time{})
		if errN != nil || errI != nil || dn.Status != mpc.StatusOptimal || di.Status != mpc.StatusOptimal {
			t.Fatalf("demand %v: native %v %s, ipopt %v %s", demand, errN, dn.Status, errI, di.Status)
		}
		if d := dn.Objective - di.Objective; d > 2e-3*(1+di.Objective) || -d > 2e-3*(1+di.Objective) {
			t.Errorf("demand %v: native objective %.6g, Ipopt %.6g", demand, dn.Objective, di.Objective)
		}
	}
	if native.Rescues != 0 {
		t.Errorf("%d rescues on servable steps", native.Rescues)
	}
	m, _ := fam.Measure(testsupport.PumpInstance(&c, 3, 300))
	d, err := ctlN.Step(m, time.Time{})
	di, errI := ctlI.Step(m, time.Time{})
	if err != nil || d.Relaxed == nil || errI != nil || di.Relaxed == nil {
		t.Fatalf("shortfall: native %v, %s (%s), relaxed %v; ipopt %v %s", err, d.Status, d.Reason, d.Relaxed, errI, di.Status)
	}
	if dd := d.Objective - di.Objective; math.Abs(dd) > 1e-6*(1+math.Abs(di.Objective)) {
		t.Errorf("shortfall: native soft objective %.9g, Ipopt %.9g", d.Objective, di.Objective)
	}
	if native.Rescues != 0 {
		t.Errorf("%d rescues: the soft problem went to Ipopt", native.Rescues)
	}
}

func mustNLP(t *testing.T, name string) func() nlp.Solver {
	t.Helper()
	mk, err := backend.NLPByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return mk
}

// TestCoreIsCgoFree: the packages that model, learn, replay and speak MQTT payloads (gbd, mpc,
// policy, replay, telemetry, wire) and the solver spec (solver) depend on no C solver and no cgo at
// all; configs, which embeds the spec, on no C solver (net brings in cgo's resolver). The C
// libraries come in through this package only.
func TestCoreIsCgoFree(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list dependencies")
	}
	solvers := []string{"gbdmpc/gbd/master/cbc", "gbdmpc/gbd/nlp/ipopt", "gbdmpc/backend"}
	for _, c := range []struct {
		pkgs, forbidden []string
	}{
		{[]string{"gbdmpc/gbd", "gbdmpc/mpc", "gbdmpc/policy", "gbdmpc/replay", "gbdmpc/telemetry", "gbdmpc/wire", "gbdmpc/solver"},
			append([]string{"runtime/cgo"}, solvers...)},
		{[]string{"gbdmpc/configs"}, solvers},
	} {
		out, err := exec.Command("go", append([]string{"list", "-deps"}, c.pkgs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if slices.Contains(c.forbidden, dep) {
				t.Errorf("%s is a dependency of %v", dep, c.pkgs)
			}
		}
	}
}

// TestAutoMaster: "auto" is enum on an enumerated Y_pb, staged on an implicit staged one (the
// 40-binary station), cbc on an implicit one without stages.
func TestAutoMaster(t *testing.T) {
	small, err := gbd.EnumerateAdmissible(2, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(stages [][]int) *gbd.Admissible {
		a, err := gbd.ImplicitAdmissible(4, nil)
		if err != nil {
			t.Fatal(err)
		}
		a.Stages = stages
		return a
	}
	for _, c := range []struct {
		ypb  *gbd.Admissible
		want string
	}{{small, "enum"}, {mk([][]int{{0, 1}, {2, 3}}), "staged"}, {mk(nil), "cbc"}} {
		for _, name := range []string{"", backend.AutoMasterName} {
			f, got, err := backend.MasterFor(name, c.ypb)
			if err != nil || got != c.want || f().Name() != c.want {
				t.Errorf("MasterFor(%q) = %q, %v; want %s", name, got, err, c.want)
			}
		}
		if _, got, _ := backend.MasterFor("cbc", c.ypb); got != "cbc" {
			t.Errorf("an explicit name resolved to %q", got)
		}
	}
}
