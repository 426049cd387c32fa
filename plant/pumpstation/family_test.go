package pumpstation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/mpc"
)

func series(v float64, n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(s, ",") + "]"
}

func measurement(level, pumps, demand, price string) string {
	return fmt.Sprintf(`{"v":1,"seq":7,"ts_ms":1700000000000,"level_m":%s,"pumps_on":%s,"demand_m3h":%s,"price_eur_kwh":%s}`,
		level, pumps, demand, price)
}

func TestDecodeMeasurement(t *testing.T) {
	f, err := NewFamily(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	d16, p16 := series(80, 16), series(0.12, 16)
	good := measurement("2.5", "[0,1,0]", d16, p16)
	if _, err := f.DecodeMeasurement([]byte(good)); err != nil {
		t.Fatalf("good measurement rejected: %v", err)
	}
	if _, err := f.DecodeMeasurement([]byte(measurement("0", "[0,0,0]", series(0, 16), series(0, 16)))); err != nil {
		t.Errorf("empty tank, no demand, free power rejected: %v", err)
	}
	bad := []struct {
		name, payload, want string
	}{
		{"not json", `{"v":1,`, "unexpected"},
		{"trailing", good + `{}`, "trailing"},
		{"wrong v", strings.Replace(good, `"v":1`, `"v":2`, 1), `"v"`},
		{"missing v", strings.Replace(good, `"v":1,`, ``, 1), `missing "v"`},
		{"missing level", fmt.Sprintf(`{"v":1,"pumps_on":[0,0,0],"demand_m3h":%s,"price_eur_kwh":%s}`, d16, p16), `missing "level_m"`},
		{"missing pumps", fmt.Sprintf(`{"v":1,"level_m":2,"demand_m3h":%s,"price_eur_kwh":%s}`, d16, p16), `missing "pumps_on"`},
		{"missing demand", fmt.Sprintf(`{"v":1,"level_m":2,"pumps_on":[0,0,0],"price_eur_kwh":%s}`, p16), `missing "demand_m3h"`},
		{"missing price", fmt.Sprintf(`{"v":1,"level_m":2,"pumps_on":[0,0,0],"demand_m3h":%s}`, d16), `missing "price_eur_kwh"`},
		{"level below floor", measurement("-0.1", "[0,1,0]", d16, p16), `"level_m"`},
		{"level above overflow", measurement("6.5", "[0,1,0]", d16, p16), `"level_m"`},
		{"level string", measurement(`"2"`, "[0,1,0]", d16, p16), "level_m"},
		{"level huge", measurement("1e999", "[0,1,0]", d16, p16), "level_m"},
		{"two pumps", measurement("2", "[0,1]", d16, p16), `"pumps_on" has 2`},
		{"pump half on", measurement("2", "[0,0.5,0]", d16, p16), `"pumps_on"[1]`},
		{"pump 2", measurement("2", "[0,2,0]", d16, p16), `"pumps_on"[1]`},
		{"short demand", measurement("2", "[0,1,0]", series(80, 15), p16), `"demand_m3h" has 15`},
		{"long price", measurement("2", "[0,1,0]", d16, series(0.1, 17)), `"price_eur_kwh" has 17`},
		{"negative demand", measurement("2", "[0,1,0]", strings.Replace(d16, "80", "-1", 1), p16), `"demand_m3h"[0]`},
		{"demand too high", measurement("2", "[0,1,0]", strings.Replace(d16, "80", "5000", 1), p16), "exceeds"},
		{"negative price", measurement("2", "[0,1,0]", d16, strings.Replace(p16, "0.12", "-0.1", 1)), `"price_eur_kwh"[0]`},
		{"price too high", measurement("2", "[0,1,0]", d16, strings.Replace(p16, "0.12", "99", 1)), "exceeds"},
		{"null demand", measurement("2", "[0,1,0]", "null", p16), `missing "demand_m3h"`},
	}
	for _, c := range bad {
		_, err := f.DecodeMeasurement([]byte(c.payload))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !errors.Is(err, ErrInstance) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to mention %q", c.name, err, c.want)
		}
	}
}

func TestInstanceRoundTrip(t *testing.T) {
	c := DefaultConfig()
	in := Sample(rand.New(rand.NewPCG(1, 1)), &c, ptr(DefaultProfile()))
	back, err := Decode(MarshalInstance(in), &c)
	if err != nil {
		t.Fatal(err)
	}
	if back.Level != in.Level || !slices.Equal(back.PumpsOn, in.PumpsOn) || !slices.Equal(back.Demand, in.Demand) || !slices.Equal(back.Price, in.Price) {
		t.Errorf("round trip changed the instance")
	}
}

// TestSampleRanges: sampled instances are valid, demand follows the daily shape within about
// 40–160 m³/h, prices are the two tariffs.
func TestSampleRanges(t *testing.T) {
	c := DefaultConfig()
	prof := DefaultProfile()
	rng := rand.New(rand.NewPCG(10, 20))
	lo, hi := math.Inf(1), math.Inf(-1)
	for range 500 {
		in := Sample(rng, &c, &prof)
		if err := in.Validate(&c); err != nil {
			t.Fatal(err)
		}
		if in.Level < SampleLevel[0] || in.Level > SampleLevel[1] {
			t.Errorf("level %v outside the sampling range", in.Level)
		}
		on := 0
		for _, v := range in.PumpsOn {
			on += v
		}
		if on > c.MaxOn {
			t.Errorf("%d pumps running", on)
		}
		for t2 := range in.Demand {
			lo, hi = math.Min(lo, in.Demand[t2]), math.Max(hi, in.Demand[t2])
			if p := in.Price[t2]; p != 0.12 && p != 0.35 {
				t.Errorf("price %v is not a tariff", p)
			}
		}
	}
	if lo < 36 || hi > 176 || lo > 50 || hi < 140 {
		t.Errorf("sampled demand spans [%.1f, %.1f] m³/h, want about 40–160 with both ends reached", lo, hi)
	}
	if prof.Price(8) != 0.35 || prof.Price(12) != 0.12 || prof.Price(20.9) != 0.35 || prof.Price(23) != 0.12 {
		t.Error("tariff windows wrong")
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Config){
		"area":          func(c *Config) { c.Area = 0 },
		"blocks":        func(c *Config) { c.Blocks = 3 },
		"levels":        func(c *Config) { c.LevelMin = 5.5 },
		"phys":          func(c *Config) { c.PhysMax = 4 },
		"ref":           func(c *Config) { c.LevelRef = 0.5 },
		"no pumps":      func(c *Config) { c.Pumps = nil },
		"qmin>qmax":     func(c *Config) { c.Pumps[0].QMin = 70 },
		"negative cost": func(c *Config) { c.Pumps[1].F = -1 },
		"max_on":        func(c *Config) { c.MaxOn = 0 },
		"safe flow":     func(c *Config) { c.SafeOn = []int{1, 0, 0} },
		"safe length":   func(c *Config) { c.SafeOn, c.SafeFlow = []int{0, 0}, []float64{0, 0} },
		"max_enumerate": func(c *Config) { c.MaxEnumerate = -1 },
		"nan weight":    func(c *Config) { c.WTrack = math.NaN() },
	}
	for name, mut := range bad {
		c := DefaultConfig()
		c.Pumps = slices.Clone(c.Pumps)
		mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", name, err)
		}
	}
}

// solvedPlan solves one instance and returns its plan.
func solvedPlan(t *testing.T, f *Family, in Instance) (*Plan, *gbd.Result) {
	t.Helper()
	m, err := f.Measure(in)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := m.Problem()
	r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, f.Admissible(), gbd.Settings{})
	if err != nil || r.Y == nil {
		t.Fatalf("solve: %v %v", err, r)
	}
	pl, err := f.PlanFrom(m, r)
	if err != nil {
		t.Fatal(err)
	}
	return pl.(*Plan), r
}

func TestPlanFromAndShift(t *testing.T) {
	f, c := specFamily(t)
	in := SampleAt(rand.New(rand.NewPCG(3, 3)), &c, ptr(DefaultProfile()), 17)
	pl, r := solvedPlan(t, f, in)

	// The plan is the solve: levels follow the model, pumps follow y, flows respect the pump limits.
	h := in.Level
	for tt := range c.Horizon {
		sum := 0.0
		for p, pump := range c.Pumps {
			on := r.Y[c.YIndex(p, c.BlockOf(tt))]
			if float64(pl.On[p][tt]) != on {
				t.Fatalf("pump %d step %d: on=%d, y=%v", p, tt, pl.On[p][tt], on)
			}
			q := pl.Flow[p][tt]
			if on == 1 && (q < pump.QMin || q > pump.QMax) || on == 0 && q != 0 {
				t.Errorf("pump %d step %d: flow %v with on=%v", p, tt, q, on)
			}
			sum += q
		}
		h += c.Dt / c.Area * (sum - in.Demand[tt])
		if math.Abs(h-pl.Level[tt]) > 1e-5 {
			t.Errorf("step %d: plan level %v, dynamics give %v", tt, pl.Level[tt], h)
		}
		if pl.Level[tt] < c.LevelMin-1e-6 || pl.Level[tt] > c.LevelMax+1e-6 {
			t.Errorf("step %d: planned level %v outside the limits", tt, pl.Level[tt])
		}
	}
	var a ApplyJSON
	if err := json.Unmarshal(pl.Apply(), &a); err != nil || len(a.PumpsOn) != 3 || len(a.Flow) != 3 {
		t.Fatalf("apply %s: %v", pl.Apply(), err)
	}
	for p := range 3 {
		if a.PumpsOn[p] != pl.On[p][0] || a.Flow[p] != pl.Flow[p][0] {
			t.Errorf("apply %s is not step 0", pl.Apply())
		}
	}
	if !json.Valid(pl.JSON()) || !strings.Contains(string(pl.JSON()), `"steps"`) {
		t.Errorf("plan JSON %s", pl.JSON())
	}

	// Shifting: step k of the shifted plan is step k+1 of the solved one; the block pattern stays
	// admissible and moves by a block every 4 steps.
	var cur mpc.Plan = pl
	for k := 1; k < c.Horizon; k++ {
		next, ok := cur.Shift()
		if !ok {
			t.Fatalf("shift %d refused", k)
		}
		sp := next.(*Plan)
		for p := range 3 {
			if sp.On[p][0] != pl.On[p][k] || sp.Flow[p][0] != pl.Flow[p][k] {
				t.Errorf("shift %d: first move differs from step %d", k, k)
			}
		}
		y, x := sp.Start()
		if y == nil || f.Admissible().Index(y) < 0 {
			t.Errorf("shift %d: start pattern %v not admissible", k, y)
		}
		if len(x) != c.NX() {
			t.Errorf("shift %d: start x has %d values", k, len(x))
		}
		want := mpc.Blocking{Steps: 16, Blocks: 4}.ShiftPattern(r.Y, k)
		if !slices.Equal(y, want) {
			t.Errorf("shift %d: pattern %v, want %v", k, y, want)
		}
		cur = next
	}
	if _, ok := cur.Shift(); ok {
		t.Error("a plan shifted N−1 times still shifts")
	}
}

// TestShiftedPatternAlwaysAdmissible: for every y in Y_pb and every shift the pattern stays in Y_pb
// (the claim of mpc's doc that makes the shifted plan a valid Y0).
func TestShiftedPatternAlwaysAdmissible(t *testing.T) {
	c := DefaultConfig()
	ypb, _ := Admissible(&c)
	bl := mpc.Blocking{Steps: c.Horizon, Blocks: c.Blocks}
	y := make([]float64, c.NY())
	for j := range ypb.Count() {
		ypb.Float(j, y)
		for k := 1; k < c.Horizon; k++ {
			if s := bl.ShiftPattern(y, k); ypb.Index(s) < 0 {
				t.Fatalf("y=%v shifted by %d gives %v, not admissible", y, k, s)
			}
		}
	}
}

// TestSafeActionHoldsTheLevel: the level-holding safe action pumps more than the demand when the
// level is low and less when it is high, within what the pumps can do and max_on; an operator's
// fixed safe action (safe_hold off) is applied as configured whatever the measurement.
func TestSafeActionHoldsTheLevel(t *testing.T) {
	f, _ := NewFamily(DefaultConfig())
	c := f.Config()
	apply := func(level, demand float64) ApplyJSON {
		t.Helper()
		in := Instance{V: 1, Level: level, PumpsOn: []int{0, 0, 0}, Demand: repeatF(demand, c.Horizon), Price: repeatF(0.2, c.Horizon)}
		m, err := f.Measure(in)
		if err != nil {
			t.Fatal(err)
		}
		a, err := DecodeApply(f.SafeActionFor(m), &c)
		if err != nil {
			t.Fatalf("level %v demand %v: the safe action is not a valid apply: %v", level, demand, err)
		}
		return a
	}
	total := func(a ApplyJSON) (q float64, n int) {
		for p := range a.Flow {
			q += a.Flow[p]
			n += a.PumpsOn[p]
		}
		return q, n
	}
	for _, tc := range []struct {
		level, demand float64
		check         func(q float64) bool
		what          string
	}{
		{c.LevelRef, 80, func(q float64) bool { return math.Abs(q-80) < 1e-9 }, "at the reference: the demand exactly"},
		{c.LevelRef - 0.1, 80, func(q float64) bool { return math.Abs(q-100) < 1e-9 }, "0.1 m low: demand + A·0.1/Δt = 100"},
		{c.LevelRef + 0.3, 80, func(q float64) bool { return math.Abs(q-20) < 1e-6 }, "0.3 m high: 80 − 60 = 20, the smallest pump at q_min"},
		{c.LevelRef + 0.5, 80, func(q float64) bool { return q == 0 }, "0.5 m high: nothing (80 − 100 < 0)"},
		{c.LevelMin, 200, func(q float64) bool { return math.Abs(q-240) < 1e-9 }, "low with a large demand: the two largest pumps flat out"},
		{c.LevelRef - 0.05, 5, func(q float64) bool { return math.Abs(q-20) < 1e-9 }, "a small need: the smallest pump at q_min"},
	} {
		a := apply(tc.level, tc.demand)
		q, n := total(a)
		if !tc.check(q) || n > c.MaxOn {
			t.Errorf("%s: %d pumps, %v m³/h (%+v)", tc.what, n, q, a)
		}
	}
	// The rule keeps the tank within its limits where the fixed "all off" drains it: level after
	// one step, for a tank starting 0.5 m above the lower limit with demand 100 m³/h.
	h0 := c.LevelMin + 0.5
	q, _ := total(apply(h0, 100))
	if h1 := h0 + c.Dt/c.Area*(q-100); h1 < h0 {
		t.Errorf("level %v → %v under the level-holding rule; all off would give %v", h0, h1, h0+c.Dt/c.Area*(-100))
	}

	fixed := DefaultConfig()
	fixed.SafeHold = false
	fixed.SafeOn, fixed.SafeFlow = []int{0, 1, 0}, []float64{0, 45, 0}
	ff, err := NewFamily(fixed)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ff.Measure(Instance{V: 1, Level: c.LevelMin, PumpsOn: []int{0, 0, 0}, Demand: repeatF(200, c.Horizon), Price: repeatF(0.2, c.Horizon)})
	if got := string(ff.SafeActionFor(m)); got != `{"pumps_on":[0,1,0],"flow_m3h":[0,45,0]}` {
		t.Errorf("fixed safe action %s", got)
	}
}

func repeatF(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestSafeActionAndStarter(t *testing.T) {
	f, _ := NewFamily(DefaultConfig())
	if got := string(f.SafeAction()); got != `{"pumps_on":[0,0,0],"flow_m3h":[0,0,0]}` {
		t.Errorf("safe action %s", got)
	}
	c := f.Config()
	in := SampleAt(rand.New(rand.NewPCG(4, 4)), &c, ptr(DefaultProfile()), 3)
	in.PumpsOn = []int{1, 0, 1}
	m, _ := f.Measure(in)
	y, _ := m.Start()
	if want := []float64{1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1}; !slices.Equal(y, want) {
		t.Errorf("starter %v, want %v", y, want)
	}
	in.PumpsOn = []int{1, 1, 1}
	m, _ = f.Measure(in)
	if y, _ := m.Start(); y != nil {
		t.Errorf("three running pumps give start %v, want nil (not admissible)", y)
	}
}

// TestDecodePlanRoundTrip: a published plan (solved and shifted) reads back to the same plan, and
// every kind of damage is refused with an error naming it.
func TestDecodePlanRoundTrip(t *testing.T) {
	f, c := specFamily(t)
	in := SampleAt(rand.New(rand.NewPCG(5, 1)), &c, ptr(DefaultProfile()), 30)
	pl, _ := solvedPlan(t, f, in)
	shifted, ok := pl.Shift()
	if !ok {
		t.Fatal("no shift")
	}
	for name, p := range map[string]mpc.Plan{"solved": pl, "shifted": shifted} {
		back, err := f.DecodePlan(p.JSON())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(back.JSON()) != string(p.JSON()) || string(back.Apply()) != string(p.Apply()) {
			t.Errorf("%s: round trip differs:\n%s\n%s", name, p.JSON(), back.JSON())
		}
		y0, x0 := p.Start()
		y1, x1 := back.Start()
		if !slices.Equal(y0, y1) || !slices.Equal(x0, x1) {
			t.Errorf("%s: start point differs after the round trip", name)
		}
		n0, ok0 := p.Shift()
		n1, ok1 := back.Shift()
		if ok0 != ok1 || ok0 && string(n0.JSON()) != string(n1.JSON()) {
			t.Errorf("%s: shift differs after the round trip", name)
		}
	}

	good := map[string]any{}
	if err := json.Unmarshal(pl.JSON(), &good); err != nil {
		t.Fatal(err)
	}
	damage := map[string]func(m map[string]any){
		"null plan":      nil,
		"short horizon":  func(m map[string]any) { m["steps"] = m["steps"].([]any)[1:] },
		"blocks":         func(m map[string]any) { m["blocks"] = 3.0 },
		"dt":             func(m map[string]any) { m["dt_h"] = 0.5 },
		"shifted":        func(m map[string]any) { m["shifted"] = -1.0 },
		"y length":       func(m map[string]any) { m["y"] = []any{1.0} },
		"y not binary":   func(m map[string]any) { m["y"].([]any)[0] = 0.5 },
		"step number":    func(m map[string]any) { m["steps"].([]any)[2].(map[string]any)["t"] = 7.0 },
		"pump state":     func(m map[string]any) { m["steps"].([]any)[0].(map[string]any)["pumps_on"].([]any)[0] = 2.0 },
		"pumps length":   func(m map[string]any) { m["steps"].([]any)[0].(map[string]any)["flow_m3h"] = []any{0.0} },
		"flow when off":  func(m map[string]any) { offFlow(m) },
		"flow too high":  func(m map[string]any) { onFlow(m, 1e6) },
		"level not json": func(m map[string]any) { m["level0_m"] = "x" },
	}
	for name, mod := range damage {
		raw := []byte("null")
		if mod != nil {
			var m map[string]any
			_ = json.Unmarshal(pl.JSON(), &m)
			mod(m)
			raw, _ = json.Marshal(m)
		}
		if _, err := f.DecodePlan(raw); err == nil || !strings.Contains(err.Error(), "pumpstation: plan") {
			t.Errorf("%s: err = %v, want a pumpstation plan error", name, err)
		}
	}
	if _, err := f.DecodePlan([]byte(`{"steps":[`)); err == nil {
		t.Error("truncated JSON accepted")
	}
}

// offFlow gives a flow to the first pump-step that is off; onFlow sets the first running one's.
func offFlow(m map[string]any)           { setFlow(m, 0, 3) }
func onFlow(m map[string]any, q float64) { setFlow(m, 1, q) }

func setFlow(m map[string]any, state float64, q float64) {
	for _, s := range m["steps"].([]any) {
		st := s.(map[string]any)
		for p, on := range st["pumps_on"].([]any) {
			if on.(float64) == state {
				st["flow_m3h"].([]any)[p] = q
				return
			}
		}
	}
}

// specFamily is the spec's station (DefaultConfig) and its configuration.
func specFamily(tb testing.TB) (*Family, Config) {
	tb.Helper()
	f, err := NewFamily(DefaultConfig())
	if err != nil {
		tb.Fatal(err)
	}
	return f, f.Config()
}

// Alternates hands every block of one running pump to another pump that is off in those blocks,
// for each such pair, and nothing else; the controller evaluates them right after the shifted plan.
func TestAlternates(t *testing.T) {
	c, err := SizedConfig(40) // 5 pumps × 8 blocks
	if err != nil {
		t.Fatal(err)
	}
	fam, err := NewFamily(c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := fam.Measure(constant(&c, 3, 60, make([]int, c.NP())))
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float64, c.NY())
	for b := range c.Blocks {
		y[c.YIndex(3, b)] = 1 // pump 3 all horizon
	}
	y[c.YIndex(0, 0)], y[c.YIndex(0, 1)] = 1, 1 // pump 0 in the first two blocks
	alts := m.Alternates(y)
	// Pump 3 to 1, 2, 4 (0 runs in blocks 0-1); pump 0 to 1, 2, 4 (3 runs there).
	if len(alts) != 6 {
		t.Fatalf("%d alternates, want 6", len(alts))
	}
	seen := map[string]bool{}
	for _, a := range alts {
		from, to := map[int]int{}, map[int]int{} // pump → blocks switched off / on
		for p := range c.NP() {
			for b := range c.Blocks {
				i := c.YIndex(p, b)
				switch {
				case y[i] == 1 && a[i] == 0:
					from[p]++
				case y[i] == 0 && a[i] == 1:
					to[p]++
				}
			}
		}
		handed := len(from) == 1 && len(to) == 1
		for p, n := range from {
			for q, m := range to {
				// every running block of p, no more, no fewer
				handed = handed && p != q && n == m && n == int(sumBlocks(y, &c, p))
			}
		}
		if !handed {
			t.Errorf("alternate %v is not one pump's blocks handed to another (off %v, on %v)", a, from, to)
		}
		if !fam.Admissible().Contains(a) || seen[fmt.Sprint(a)] {
			t.Errorf("alternate %v: admissible %v, repeated %v", a, fam.Admissible().Contains(a), seen[fmt.Sprint(a)])
		}
		seen[fmt.Sprint(a)] = true
	}
	if got := m.Alternates(make([]float64, c.NY())); len(got) != 0 {
		t.Errorf("all pumps off: %d alternates, want none", len(got))
	}
	if got := m.Alternates(y[:5]); got != nil {
		t.Errorf("wrong length: %v", got)
	}

	// In a controller with Options.Alternates: the second step evaluates the shifted plan, then its
	// alternates.
	sf, sc := specFamily(t)
	ctl, err := mpc.NewController(sf, mpc.Options{Alternates: true})
	if err != nil {
		t.Fatal(err)
	}
	m1, err := sf.Measure(constant(&sc, 3, 80, []int{0, 0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctl.Step(m1, time.Time{})
	if err != nil || d.Status != mpc.StatusOptimal {
		t.Fatalf("first step: %v %v", err, d.Status)
	}
	ap, err := DecodeApply(d.Apply, &sc)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := sf.Measure(constant(&sc, 2.9, 80, ap.PumpsOn))
	if err != nil {
		t.Fatal(err)
	}
	d2, err := ctl.Step(m2, time.Time{})
	if err != nil || d2.Status != mpc.StatusOptimal {
		t.Fatalf("second step: %v %v", err, d2.Status)
	}
	tr := d2.Result.Trace
	var want [][]float64
	for _, a := range m2.Alternates(tr[0].Y) {
		if sf.Admissible().Contains(a) {
			want = append(want, a)
		}
	}
	if len(want) == 0 || len(tr) < 1+len(want) {
		t.Fatalf("%d admissible alternates of %v, %d iterations", len(want), tr[0].Y, len(tr))
	}
	for k, w := range want {
		if !slices.Equal(tr[1+k].Y, w) {
			t.Errorf("iteration %d evaluated %v, want the alternate %v", 1+k, tr[1+k].Y, w)
		}
	}
}

// sumBlocks is how many blocks pump p runs in y.
func sumBlocks(y []float64, c *Config, p int) float64 {
	n := 0.0
	for b := range c.Blocks {
		n += y[c.YIndex(p, b)]
	}
	return n
}
