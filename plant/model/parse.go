package model

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrModel is wrapped by every error of a model file.
var ErrModel = errors.New("invalid model")

// Error is a model file's error at a line.
type Error struct {
	File string // "" for a model read from bytes without a name
	Line int    // 1-based; 0 when the error concerns the whole file
	Msg  string
}

func (e *Error) Error() string {
	f := e.File
	if f == "" {
		f = "model"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", f, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", f, e.Msg)
}

func (e *Error) Unwrap() error { return ErrModel }

// LoadFile reads, parses and checks a model file.
func LoadFile(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	return Parse(path, data)
}

// maxModelBytes bounds a model file: a model is a page of YAML, not a data set.
const maxModelBytes = 1 << 20

// Parse parses and checks a model; file names it in errors.
func Parse(file string, data []byte) (*Model, error) {
	p := parser{file: file}
	if len(data) > maxModelBytes {
		return nil, p.errf(0, "file is %d bytes, more than the %d a model may have", len(data), maxModelBytes)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, p.yamlErr(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, p.errf(0, "empty file: a model needs name, dt, horizon, states or inputs, and units")
	}
	return ParseNode(file, doc.Content[0])
}

// ParseNode parses and checks a model written as a YAML mapping inside a larger file (a daemon
// config's plants[i].model), so that errors name that file's lines.
func ParseNode(file string, n *yaml.Node) (*Model, error) {
	p := parser{file: file}
	m, err := p.model(n)
	if err != nil {
		return nil, err
	}
	m.file = file
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

type parser struct{ file string }

func (p *parser) errf(line int, format string, a ...any) error {
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, a...)}
}

// yamlErr keeps the line yaml.v3 names ("yaml: line 3: ..."). yaml.v3 counts it from the start
// of the construct it was reading, and for some errors one line early, hence "at or after".
func (p *parser) yamlErr(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				return p.errf(n, "YAML syntax (at or just after this line): %s", strings.TrimSpace(rest[i+1:]))
			}
		}
	}
	return p.errf(0, "YAML: %s", msg)
}

// field is one key of a mapping with its value.
type field struct {
	key  string
	line int
	val  *yaml.Node
}

// fields reads a mapping whose keys must be among allowed, each at most once.
func (p *parser) fields(n *yaml.Node, what string, allowed ...string) (map[string]field, error) {
	if n.Kind == yaml.AliasNode {
		return nil, p.errf(n.Line, "%s: YAML aliases are not supported in a model", what)
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n.Line, "%s must be a mapping of keys to values", what)
	}
	out := make(map[string]field, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return nil, p.errf(k.Line, "%s: keys must be plain names", what)
		}
		if prev, dup := out[k.Value]; dup {
			return nil, p.errf(k.Line, "%s: key %q given twice (first on line %d)", what, k.Value, prev.line)
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a == k.Value
		}
		if !ok {
			return nil, p.errf(k.Line, "%s: unknown key %q (want one of %s)", what, k.Value, strings.Join(allowed, ", "))
		}
		out[k.Value] = field{key: k.Value, line: k.Line, val: v}
	}
	return out, nil
}

func (p *parser) scalar(f field) (string, error) {
	if f.val.Kind != yaml.ScalarNode {
		return "", p.errf(f.line, "%s must be a single value", f.key)
	}
	return f.val.Value, nil
}

func (p *parser) str(f field) (string, error) {
	s, err := p.scalar(f)
	if err != nil {
		return "", err
	}
	if f.val.Tag != "!!str" {
		return "", p.errf(f.line, "%s must be a name, got %q", f.key, s)
	}
	return s, nil
}

func (p *parser) num(f field) (float64, error) {
	s, err := p.scalar(f)
	if err != nil {
		return 0, err
	}
	if f.val.Tag != "!!int" && f.val.Tag != "!!float" {
		return 0, p.errf(f.line, "%s must be a number, got %q", f.key, s)
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, p.errf(f.line, "%s must be a finite number, got %q", f.key, s)
	}
	return v, nil
}

func (p *parser) integer(f field) (int, error) {
	s, err := p.scalar(f)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || f.val.Tag != "!!int" {
		return 0, p.errf(f.line, "%s must be a whole number, got %q", f.key, s)
	}
	return v, nil
}

func (p *parser) boolean(f field) (bool, error) {
	s, err := p.scalar(f)
	if err != nil {
		return false, err
	}
	if f.val.Tag != "!!bool" {
		return false, p.errf(f.line, "%s must be true or false, got %q", f.key, s)
	}
	return s == "true", nil
}

// seq returns the items of a sequence.
func (p *parser) seq(f field) ([]*yaml.Node, error) {
	if f.val.Kind != yaml.SequenceNode {
		return nil, p.errf(f.line, "%s must be a list", f.key)
	}
	return f.val.Content, nil
}

// nums reads a list of n numbers (any length when n < 0).
func (p *parser) nums(f field, n int) ([]float64, error) {
	items, err := p.seq(f)
	if err != nil {
		return nil, err
	}
	if n >= 0 && len(items) != n {
		return nil, p.errf(f.line, "%s must be a list of %d numbers, got %d", f.key, n, len(items))
	}
	out := make([]float64, len(items))
	for i, it := range items {
		v, err := p.num(field{key: fmt.Sprintf("%s[%d]", f.key, i), line: it.Line, val: it})
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (p *parser) names(f field) ([]string, error) {
	items, err := p.seq(f)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, err := p.str(field{key: fmt.Sprintf("%s[%d]", f.key, i), line: it.Line, val: it})
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// rng reads [lo, hi] with lo ≤ hi.
func (p *parser) rng(f field) (lo, hi float64, err error) {
	v, err := p.nums(f, 2)
	if err != nil {
		return 0, 0, err
	}
	if v[0] > v[1] {
		return 0, 0, p.errf(f.line, "%s [%v, %v] is empty: the first number must not exceed the second", f.key, v[0], v[1])
	}
	return v[0], v[1], nil
}

// list calls item for every mapping of a list key.
func (p *parser) list(f field, item func(n *yaml.Node) error) error {
	items, err := p.seq(f)
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := item(it); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) model(n *yaml.Node) (*Model, error) {
	fs, err := p.fields(n, "model", "name", "dt", "horizon", "blocks", "max_enumerate",
		"states", "inputs", "units", "forecasts", "costs", "rules", "constraints", "safe_hold")
	if err != nil {
		return nil, err
	}
	m := &Model{line: n.Line}
	for _, req := range []string{"name", "dt", "horizon"} {
		if _, ok := fs[req]; !ok {
			return nil, p.errf(n.Line, "model: %q is required", req)
		}
	}
	if m.Name, err = p.str(fs["name"]); err != nil {
		return nil, err
	}
	if m.Dt, err = p.num(fs["dt"]); err != nil {
		return nil, err
	}
	if m.Dt <= 0 {
		return nil, p.errf(fs["dt"].line, "dt must be positive, got %v", m.Dt)
	}
	if m.Horizon, err = p.integer(fs["horizon"]); err != nil {
		return nil, err
	}
	if m.Horizon < 1 || m.Horizon > maxHorizon {
		return nil, p.errf(fs["horizon"].line, "horizon must be between 1 and %d steps, got %d", maxHorizon, m.Horizon)
	}
	m.Blocks = m.Horizon
	if f, ok := fs["blocks"]; ok {
		if m.Blocks, err = p.integer(f); err != nil {
			return nil, err
		}
		if m.Blocks < 1 || m.Horizon%m.Blocks != 0 {
			return nil, p.errf(f.line, "blocks must divide the horizon (%d steps) into equal move blocks, got %d", m.Horizon, m.Blocks)
		}
	}
	if f, ok := fs["max_enumerate"]; ok {
		if m.MaxEnumerate, err = p.integer(f); err != nil {
			return nil, err
		}
		if m.MaxEnumerate < 0 {
			return nil, p.errf(f.line, "max_enumerate must be ≥ 0, got %d", m.MaxEnumerate)
		}
	}
	if f, ok := fs["safe_hold"]; ok {
		if m.SafeHold, err = p.safeHold(f.val); err != nil {
			return nil, err
		}
	}
	steps := []struct {
		key string
		fn  func(*yaml.Node) error
	}{
		{"forecasts", func(n *yaml.Node) error { return p.forecast(m, n) }},
		{"states", func(n *yaml.Node) error { return p.state(m, n) }},
		{"inputs", func(n *yaml.Node) error { return p.input(m, n) }},
		{"units", func(n *yaml.Node) error { return p.unit(m, n) }},
		{"costs", func(n *yaml.Node) error { return p.cost(m, n) }},
		{"rules", func(n *yaml.Node) error { return p.rule(m, n) }},
		{"constraints", func(n *yaml.Node) error { return p.constraint(m, n) }},
	}
	for _, s := range steps {
		if f, ok := fs[s.key]; ok {
			if err := p.list(f, s.fn); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// maxHorizon and maxItems bound a model's size so that a file cannot ask for unbounded memory.
const (
	maxHorizon  = 1000
	maxItems    = 200
	maxBinaries = 1024
)

func (p *parser) name(fs map[string]field, n *yaml.Node, what string) (string, error) {
	f, ok := fs["name"]
	if !ok {
		return "", p.errf(n.Line, "%s: \"name\" is required", what)
	}
	return p.str(f)
}

func (p *parser) forecast(m *Model, n *yaml.Node) error {
	fs, err := p.fields(n, "forecast", "name", "range", "typical")
	if err != nil {
		return err
	}
	fc := Forecast{line: n.Line}
	if fc.Name, err = p.name(fs, n, "forecast"); err != nil {
		return err
	}
	f, ok := fs["range"]
	if !ok {
		return p.errf(n.Line, "forecast %s: \"range\" [lo, hi] is required (measurements are checked against it)", fc.Name)
	}
	if fc.Lo, fc.Hi, err = p.rng(f); err != nil {
		return err
	}
	fc.TypLo, fc.TypHi = fc.Lo, fc.Hi
	if f, ok := fs["typical"]; ok {
		if fc.TypLo, fc.TypHi, err = p.rng(f); err != nil {
			return err
		}
		if fc.TypLo < fc.Lo || fc.TypHi > fc.Hi {
			return p.errf(f.line, "forecast %s: typical [%v, %v] must lie within its range [%v, %v]", fc.Name, fc.TypLo, fc.TypHi, fc.Lo, fc.Hi)
		}
	}
	m.Forecasts = append(m.Forecasts, fc)
	return nil
}

func (p *parser) state(m *Model, n *yaml.Node) error {
	fs, err := p.fields(n, "state", "name", "range", "min", "max", "soft_min", "soft_max", "soft_penalty", "next", "const")
	if err != nil {
		return err
	}
	s := State{line: n.Line}
	if s.Name, err = p.name(fs, n, "state"); err != nil {
		return err
	}
	f, ok := fs["range"]
	if !ok {
		return p.errf(n.Line, "state %s: \"range\" [lo, hi] (its physical range) is required", s.Name)
	}
	if s.Lo, s.Hi, err = p.rng(f); err != nil {
		return err
	}
	opt := []struct {
		key string
		v   *float64
		has *bool
	}{
		{"min", &s.Min, &s.HasMin}, {"max", &s.Max, &s.HasMax},
		{"soft_min", &s.SoftMin, &s.HasSoftMin}, {"soft_max", &s.SoftMax, &s.HasSoftMax},
		{"soft_penalty", &s.SoftPenalty, nil}, {"const", &s.Const, nil},
	}
	for _, o := range opt {
		if f, ok := fs[o.key]; ok {
			if *o.v, err = p.num(f); err != nil {
				return err
			}
			if o.has != nil {
				*o.has = true
			}
		}
	}
	f, ok = fs["next"]
	if !ok {
		return p.errf(n.Line, "state %s: \"next\" (its dynamics: coefficients by state, input or forecast name) is required", s.Name)
	}
	if s.Next, err = p.coefs(f); err != nil {
		return err
	}
	m.States = append(m.States, s)
	return nil
}

// coefs reads a mapping of names to numbers, in the file's order.
func (p *parser) coefs(f field) ([]Coef, error) {
	if f.val.Kind != yaml.MappingNode {
		return nil, p.errf(f.line, "%s must be a mapping of names to coefficients", f.key)
	}
	var out []Coef
	seen := map[string]int{}
	for i := 0; i+1 < len(f.val.Content); i += 2 {
		k, v := f.val.Content[i], f.val.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, p.errf(k.Line, "%s: keys must be names", f.key)
		}
		if l, dup := seen[k.Value]; dup {
			return nil, p.errf(k.Line, "%s: %q given twice (first on line %d)", f.key, k.Value, l)
		}
		seen[k.Value] = k.Line
		x, err := p.num(field{key: f.key + "." + k.Value, line: k.Line, val: v})
		if err != nil {
			return nil, err
		}
		out = append(out, Coef{Name: k.Value, Value: x, line: k.Line})
	}
	return out, nil
}

func (p *parser) input(m *Model, n *yaml.Node) error {
	fs, err := p.fields(n, "input", "name", "range", "unit", "on_min", "safe")
	if err != nil {
		return err
	}
	in := Input{line: n.Line}
	if in.Name, err = p.name(fs, n, "input"); err != nil {
		return err
	}
	f, ok := fs["range"]
	if !ok {
		return p.errf(n.Line, "input %s: \"range\" [lo, hi] is required", in.Name)
	}
	if in.Lo, in.Hi, err = p.rng(f); err != nil {
		return err
	}
	if f, ok := fs["unit"]; ok {
		if in.Unit, err = p.str(f); err != nil {
			return err
		}
		in.unitAt = f.line
	}
	if f, ok := fs["on_min"]; ok {
		if in.Unit == "" {
			return p.errf(f.line, "input %s: on_min needs a unit that gates the input", in.Name)
		}
		if in.OnMin, err = p.num(f); err != nil {
			return err
		}
	}
	if in.Unit == "" {
		in.Safe = math.Min(math.Max(0, in.Lo), in.Hi)
	}
	if f, ok := fs["safe"]; ok {
		if in.Safe, err = p.num(f); err != nil {
			return err
		}
		if in.Unit == "" && (in.Safe < in.Lo || in.Safe > in.Hi) {
			return p.errf(f.line, "input %s: safe value %v is outside its range [%v, %v]", in.Name, in.Safe, in.Lo, in.Hi)
		}
	}
	m.Inputs = append(m.Inputs, in)
	return nil
}

func (p *parser) unit(m *Model, n *yaml.Node) error {
	fs, err := p.fields(n, "unit", "name", "run_cost", "start_cost", "min_up", "min_down", "must_run", "safe_on")
	if err != nil {
		return err
	}
	u := Unit{line: n.Line, MinUp: 1, MinDown: 1}
	if u.Name, err = p.name(fs, n, "unit"); err != nil {
		return err
	}
	for _, o := range []struct {
		key string
		v   *float64
	}{{"run_cost", &u.RunCost}, {"start_cost", &u.StartCost}} {
		if f, ok := fs[o.key]; ok {
			if *o.v, err = p.num(f); err != nil {
				return err
			}
		}
	}
	if f, ok := fs["start_cost"]; ok && u.StartCost < 0 {
		return p.errf(f.line, "unit %s: start_cost %v is negative; a start that earns money makes the cost non-convex in the start indicator", u.Name, u.StartCost)
	}
	for _, o := range []struct {
		key string
		v   *int
	}{{"min_up", &u.MinUp}, {"min_down", &u.MinDown}} {
		if f, ok := fs[o.key]; ok {
			if *o.v, err = p.integer(f); err != nil {
				return err
			}
			if *o.v < 1 || *o.v > m.Blocks {
				return p.errf(f.line, "unit %s: %s must be between 1 and the %d blocks, got %d", u.Name, o.key, m.Blocks, *o.v)
			}
		}
	}
	for _, o := range []struct {
		key string
		v   *bool
	}{{"must_run", &u.MustRun}, {"safe_on", &u.SafeOn}} {
		if f, ok := fs[o.key]; ok {
			if *o.v, err = p.boolean(f); err != nil {
				return err
			}
		}
	}
	m.Units = append(m.Units, u)
	return nil
}

func (p *parser) cost(m *Model, n *yaml.Node) error {
	fs, err := p.fields(n, "cost", "var", "atom", "weight", "scale", "ref", "p", "points", "times", "steps")
	if err != nil {
		return err
	}
	c := Cost{line: n.Line, Scale: 1, Weight: 1}
	f, ok := fs["var"]
	if !ok {
		return p.errf(n.Line, "cost: \"var\" (a state or input) is required")
	}
	if c.Var, err = p.str(f); err != nil {
		return err
	}
	f, ok = fs["atom"]
	if !ok {
		return p.errf(n.Line, "cost on %s: \"atom\" is required (linear, quadratic, abs, power or pwl)", c.Var)
	}
	if c.Atom, err = p.str(f); err != nil {
		return err
	}
	switch c.Atom {
	case AtomLinear, AtomQuadratic, AtomAbs, AtomPower, AtomPWL:
	default:
		return p.errf(f.line, "cost on %s: unknown atom %q (want linear, quadratic, abs, power or pwl)", c.Var, c.Atom)
	}
	for _, o := range []struct {
		key string
		v   *float64
	}{{"weight", &c.Weight}, {"scale", &c.Scale}, {"ref", &c.Ref}, {"p", &c.P}} {
		if f, ok := fs[o.key]; ok {
			if *o.v, err = p.num(f); err != nil {
				return err
			}
		}
	}
	if f, ok := fs["p"]; ok && c.Atom != AtomPower {
		return p.errf(f.line, "cost on %s: p is the exponent of the power atom, not of %s", c.Var, c.Atom)
	}
	if c.Atom == AtomPower {
		f, ok := fs["p"]
		if !ok {
			return p.errf(n.Line, "cost on %s: the power atom needs its exponent p", c.Var)
		}
		if !(c.P >= 1) {
			return p.errf(f.line, "cost on %s: non-convex: power exponent p = %v, want p ≥ 1", c.Var, c.P)
		}
	}
	if f, ok := fs["points"]; ok {
		if c.Atom != AtomPWL {
			return p.errf(f.line, "cost on %s: points belong to the pwl atom, not to %s", c.Var, c.Atom)
		}
		items, err := p.seq(f)
		if err != nil {
			return err
		}
		for i, it := range items {
			v, err := p.nums(field{key: fmt.Sprintf("points[%d]", i), line: it.Line, val: it}, 2)
			if err != nil {
				return err
			}
			c.Points = append(c.Points, [2]float64{v[0], v[1]})
		}
		if err := checkPWL(c.Points); err != nil {
			return p.errf(f.line, "cost on %s: %v", c.Var, err)
		}
	} else if c.Atom == AtomPWL {
		return p.errf(n.Line, "cost on %s: the pwl atom needs its points [[argument, value], ...]", c.Var)
	}
	if f, ok := fs["times"]; ok {
		if c.Times, err = p.str(f); err != nil {
			return err
		}
	}
	if f, ok := fs["steps"]; ok {
		s, err := p.str(f)
		if err != nil {
			return err
		}
		switch s {
		case "all":
		case "terminal":
			c.Terminal = true
		default:
			return p.errf(f.line, "cost on %s: steps must be all or terminal, got %q", c.Var, s)
		}
	}
	m.Costs = append(m.Costs, c)
	return nil
}

// checkPWL checks that breakpoints describe a convex piecewise-linear function: at least two,
// arguments strictly increasing, slopes non-decreasing.
func checkPWL(pts [][2]float64) error {
	if len(pts) < 2 {
		return fmt.Errorf("a pwl cost needs at least two points, got %d", len(pts))
	}
	prev := math.Inf(-1)
	for i := 1; i < len(pts); i++ {
		dx := pts[i][0] - pts[i-1][0]
		if !(dx > 0) {
			return fmt.Errorf("pwl points must have increasing arguments (point %d: %v after %v)", i, pts[i][0], pts[i-1][0])
		}
		s := (pts[i][1] - pts[i-1][1]) / dx
		if s < prev-1e-12*math.Max(1, math.Abs(prev)) {
			return fmt.Errorf("non-convex: pwl slope %v after %v at point %d; slopes must not decrease", s, prev, i)
		}
		prev = s
	}
	return nil
}

func (p *parser) rule(m *Model, n *yaml.Node) error {
	fs, err := p.fields(n, "rule", "at_most", "units", "exclusive")
	if err != nil {
		return err
	}
	r := Rule{line: n.Line}
	switch {
	case fs["at_most"].val != nil && fs["exclusive"].val != nil:
		return p.errf(n.Line, "rule: at_most and exclusive are two rules; write them separately")
	case fs["at_most"].val != nil:
		r.Kind = RuleAtMost
		if r.K, err = p.integer(fs["at_most"]); err != nil {
			return err
		}
		f, ok := fs["units"]
		if !ok {
			return p.errf(n.Line, "rule at_most %d: \"units\" is required", r.K)
		}
		if r.Units, err = p.names(f); err != nil {
			return err
		}
		if r.K < 0 {
			return p.errf(fs["at_most"].line, "rule at_most: k must be ≥ 0, got %d", r.K)
		}
	case fs["exclusive"].val != nil:
		r.Kind, r.K = RuleExclusive, 1
		if _, ok := fs["units"]; ok {
			return p.errf(fs["units"].line, "rule exclusive: name the units in the exclusive list itself")
		}
		if r.Units, err = p.names(fs["exclusive"]); err != nil {
			return err
		}
		if len(r.Units) != 2 {
			return p.errf(fs["exclusive"].line, "rule exclusive: name exactly two units, got %d", len(r.Units))
		}
	default:
		return p.errf(n.Line, "rule: want at_most (with units) or exclusive")
	}
	m.Rules = append(m.Rules, r)
	return nil
}

func (p *parser) constraint(m *Model, n *yaml.Node) error {
	fs, err := p.fields(n, "constraint", "name", "sum", "eq", "le", "ge")
	if err != nil {
		return err
	}
	c := Constraint{line: n.Line}
	if c.Name, err = p.name(fs, n, "constraint"); err != nil {
		return err
	}
	f, ok := fs["sum"]
	if !ok {
		return p.errf(n.Line, "constraint %s: \"sum\" (coefficients by input or forecast name) is required", c.Name)
	}
	if c.Sum, err = p.coefs(f); err != nil {
		return err
	}
	for _, op := range []string{"eq", "le", "ge"} {
		f, ok := fs[op]
		if !ok {
			continue
		}
		if c.Op != "" {
			return p.errf(f.line, "constraint %s: give one of eq, le and ge", c.Name)
		}
		c.Op = op
		if c.RHS, err = p.num(f); err != nil {
			return err
		}
	}
	if c.Op == "" {
		return p.errf(n.Line, "constraint %s: one of eq, le or ge (the right-hand side) is required", c.Name)
	}
	m.Constraints = append(m.Constraints, c)
	return nil
}

func (p *parser) safeHold(n *yaml.Node) (*SafeHold, error) {
	fs, err := p.fields(n, "safe_hold", "state", "ref")
	if err != nil {
		return nil, err
	}
	h := &SafeHold{line: n.Line}
	for _, req := range []string{"state", "ref"} {
		if _, ok := fs[req]; !ok {
			return nil, p.errf(n.Line, "safe_hold: %q is required", req)
		}
	}
	if h.State, err = p.str(fs["state"]); err != nil {
		return nil, err
	}
	if h.Ref, err = p.num(fs["ref"]); err != nil {
		return nil, err
	}
	return h, nil
}
