package model

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// badModels are the model files under testdata/bad, each with the start of the error it must
// produce: the file and the line of what is wrong, then why.
var badModels = []struct{ file, want string }{
	{"alias", "alias.yaml:7: forecast: YAML aliases are not supported in a model"},
	{"at_most_unit_twice", "at_most_unit_twice.yaml:26: rule at_most: unit \"ch\" named twice"},
	{"bad_name", "bad_name.yaml:17: input name \"grid power\": use letters, digits, '_' and '-' (s"},
	{"blocks_not_dividing", "blocks_not_dividing.yaml:4: blocks must divide the horizon (4 steps) into equal move blo"},
	{"constraint_cannot_hold", "constraint_cannot_hold.yaml:28: constraint bal cannot hold: its sum ranges over [-30, 20], the right-hand side is eq 40"},
	{"constraint_state", "constraint_state.yaml:28: constraint bal: \"soc\" is a state; constraints relate"},
	{"constraint_two_ops", "constraint_two_ops.yaml:31: constraint bal: give one of eq, le and ge"},
	{"concave_forecast", "concave_forecast.yaml:24: cost on grid: non-convex: weight 0.01 times price in [-1, 1]"},
	{"concave_weight", "concave_weight.yaml:23: cost on soc: non-convex: weight -0.1 can be negative, which "},
	{"cost_on_unit", "cost_on_unit.yaml:24: cost: var \"ch\" is a unit; costs apply to states and inputs ("},
	{"cost_undefined_var", "cost_undefined_var.yaml:24: cost: var \"grd\" is not defined"},
	{"dt_infinite", "dt_infinite.yaml:2: dt must be a finite number, got \".inf\""},
	{"dt_negative", "dt_negative.yaml:2: dt must be positive, got -1"},
	{"dt_not_number", "dt_not_number.yaml:2: dt must be a number, got \"fast\""},
	{"duplicate_key", "duplicate_key.yaml:4: model: key \"dt\" given twice (first on line 2)"},
	{"empty_range", "empty_range.yaml:10: range [10, 0] is empty: the first number must not exceed the"},
	{"exclusive_three", "exclusive_three.yaml:26: rule exclusive: name exactly two units, got 3"},
	{"first_step_empty", "first_step_empty.yaml:9: state soc: its bounds [8, 9] leave the first step empty: fro"},
	{"gate_by_state", "gate_by_state.yaml:15: input charge: \"soc\" is a state, not a unit"},
	{"gate_undefined_unit", "gate_undefined_unit.yaml:15: input charge: unit \"chg\" is not defined"},
	{"gated_min_above_zero", "gated_min_above_zero.yaml:15: input charge is gated by unit ch but its minimum 0.5 is abov"},
	{"gated_negative_range", "gated_negative_range.yaml:15: input charge is gated by unit ch: its range must start at 0 "},
	{"horizon_zero", "horizon_zero.yaml:3: horizon must be between 1 and 1000 steps, got 0"},
	{"limits_outside_range", "limits_outside_range.yaml:9: state soc: limits [11, 12] leave nothing of its range [0, 10"},
	{"min_up_too_long", "min_up_too_long.yaml:20: unit dis: min_up must be between 1 and the 2 blocks, got 3"},
	{"missing_horizon", "missing_horizon.yaml:1: model: \"horizon\" is required"},
	{"name_twice", "name_twice.yaml:17: name \"soc\" used twice: already the state on line 9"},
	{"negative_start_cost", "negative_start_cost.yaml:19: unit ch: start_cost -0.1 is negative; a start that earns mon"},
	{"next_missing", "next_missing.yaml:9: state soc: \"next\" (its dynamics: coefficients by state, inpu"},
	{"next_undefined", "next_undefined.yaml:13: state soc: next names \"dischrge\", which is not defined"},
	{"next_unit", "next_unit.yaml:13: state soc: next names the unit \"ch\"; units enter the dynamic"},
	{"no_admissible_plan", "no_admissible_plan.yaml:1: model tiny: its rules leave no admissible on/off plan"},
	{"no_units", "no_units.yaml:1: model tiny has no units: a mixed-integer model needs at leas"},
	{"on_min_above_max", "on_min_above_max.yaml:15: input charge: on_min 6 must lie in [0, 5]"},
	{"on_min_ungated", "on_min_ungated.yaml:17: input grid: on_min needs a unit that gates the input"},
	{"power_exponent", "power_exponent.yaml:23: cost on soc: non-convex: power exponent p = 0.5, want p ≥ 1"},
	{"power_negative_argument", "power_negative_argument.yaml:23: cost on soc: non-convex: the power argument scale·(soc − ref"},
	{"power_without_p", "power_without_p.yaml:23: cost on soc: the power atom needs its exponent p"},
	{"pwl_nonconvex", "pwl_nonconvex.yaml:24: cost on grid: non-convex: pwl slope 0.05 after 0.1 at point "},
	{"pwl_one_point", "pwl_one_point.yaml:24: cost on grid: a pwl cost needs at least two points, got 1"},
	{"reserved_name", "reserved_name.yaml:17: input name \"seq\" is reserved"},
	{"rule_unknown_unit", "rule_unknown_unit.yaml:26: rule exclusive: \"dsc\" is not a unit"},
	{"safe_hold_missing_ref", "safe_hold_missing_ref.yaml:27: safe_hold: \"ref\" is required"},
	{"safe_hold_no_admissible_set", "safe_hold_no_admissible_set.yaml:28: safe_hold: the rules admit no set of the units it chooses among"},
	{"safe_hold_no_unit", "safe_hold_no_unit.yaml:30: safe_hold: no unit gates an input in the dynamics of heat"},
	{"safe_hold_not_state", "safe_hold_not_state.yaml:27: safe_hold: \"grid\" is not a state but the input on line 17"},
	{"safe_hold_ref_outside", "safe_hold_ref_outside.yaml:27: safe_hold: ref 9.5 is outside the limits [1, 9] of state soc"},
	{"safe_hold_safe_on", "safe_hold_safe_on.yaml:19: unit ch: safe_on, but safe_hold chooses whether it runs"},
	{"safe_hold_undefined_state", "safe_hold_undefined_state.yaml:27: safe_hold: state \"sco\" is not defined"},
	{"safe_hold_unknown_key", "safe_hold_unknown_key.yaml:27: safe_hold: unknown key \"deadband\" (want one of state, ref)"},
	{"safe_value_unit_off", "safe_value_unit_off.yaml:16: input discharge: safe value 2, but its unit dis is off in th"},
	{"soft_without_penalty", "soft_without_penalty.yaml:9: state soc: soft limits need a positive soft_penalty (per uni"},
	{"terminal_input", "terminal_input.yaml:24: cost on grid: steps: terminal applies to states only"},
	{"times_not_forecast", "times_not_forecast.yaml:22: cost on grid: times \"soc\" is not a forecast"},
	{"too_many_binaries", "too_many_binaries.yaml:1: model tiny has 2000 binaries"},
	{"typical_outside_range", "typical_outside_range.yaml:6: forecast load: typical [2, 12] must lie within its range [0, 10]"},
	{"unknown_atom", "unknown_atom.yaml:24: cost on grid: unknown atom \"huber\" (want linear, quadratic, "},
	{"unknown_top_key", "unknown_top_key.yaml:4: model: unknown key \"blocs\" (want one of name, dt, horizon, b"},
	{"yaml_syntax", "yaml_syntax.yaml:2: YAML syntax (at or just after this line): did not find expec"},
}

func TestBadModels(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil || len(files) != len(badModels) {
		t.Fatalf("testdata/bad holds %d files, the table %d (%v)", len(files), len(badModels), err)
	}
	for _, c := range badModels {
		t.Run(c.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", "bad", c.file+".yaml"))
			if err == nil {
				t.Fatal("loaded")
			}
			if !errors.Is(err, ErrModel) {
				t.Errorf("%v does not wrap ErrModel", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error\n  %v\ndoes not contain\n  %s", err, c.want)
			}
		})
	}
}

// The shipped models and the good test model load, and every bad file differs from the good one
// in the lines its case is about (so each fails for the reason it was written for, not another).
func TestGoodModels(t *testing.T) {
	for _, f := range []string{"testdata/good.yaml", pumpStationFile, microgridFile, coolingFile} {
		fam, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if fam.Admissible().Empty() {
			t.Errorf("%s: empty Y_pb", f)
		}
	}
}

func TestModelFileTooLarge(t *testing.T) {
	_, err := Parse("big.yaml", []byte("name: x\n"+strings.Repeat("#\n", maxModelBytes)))
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("got %v", err)
	}
}

// FuzzParse: the loader never panics, and whatever it accepts builds a family whose sampled
// instances transcribe into problems that pass gbd's own checks (dimensions, convexity).
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/good.yaml", pumpStationFile} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	bad, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	for _, p := range bad {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrModel) {
				t.Fatalf("error %v does not wrap ErrModel", err)
			}
			return
		}
		if m.Horizon*(len(m.Units)+len(m.Inputs)+len(m.States)) > 2000 {
			return // valid but too large to transcribe quickly under the fuzzer
		}
		m.MaxEnumerate = 1 << 12
		fam, err := NewFamily(m)
		if err != nil {
			return
		}
		in := m.Sample(seeded())
		mm, err := fam.DecodeMeasurement(m.MarshalInstance(&in))
		if err != nil {
			t.Fatalf("a sampled instance is refused: %v", err)
		}
		p, _ := mm.Problem()
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted model transcribes into an invalid problem: %v", err)
		}
	})
}
