package pumpstation

import (
	"errors"
	"fmt"
	"math"
)

// Name is the family name used in configs, instances, policy files and decision logs.
const Name = "pumpstation"

// Pump is one row of the spec's pump table.
type Pump struct {
	QMin      float64 `json:"q_min_m3h"`    // least flow when running, m³/h
	QMax      float64 `json:"q_max_m3h"`    // greatest flow, m³/h
	E         float64 `json:"e_kw_per_m3h"` // linear power coefficient e_p, kW per m³/h
	F         float64 `json:"f_kw"`         // cubic power coefficient f_p, kW at q_max
	RunCost   float64 `json:"run_eur_h"`    // running cost c_p, €/h
	StartCost float64 `json:"start_eur"`    // start cost γ_p, €
}

// Power is P_p(q) = e_p·q + f_p·(q/q_max)³ in kW.
func (p Pump) Power(q float64) float64 {
	u := q / p.QMax
	return p.E*q + p.F*u*u*u
}

// Config holds every number of the pump-station spec plus the physical ranges that measurements
// are validated against. DefaultConfig gives the spec's values.
type Config struct {
	Area    float64 `json:"area_m2"` // tank area A, m²
	Dt      float64 `json:"dt_h"`    // sample time Δt, h
	Horizon int     `json:"horizon"` // N steps
	Blocks  int     `json:"blocks"`  // B move blocks; Horizon must be a multiple

	LevelMin float64 `json:"level_min_m"` // hard lower level limit
	LevelMax float64 `json:"level_max_m"` // hard upper level limit
	LevelRef float64 `json:"level_ref_m"` // tracking reference h_ref

	// PhysMin and PhysMax are the levels the tank can physically show (floor and overflow). They
	// bound measurements and are the box of h, which must contain [LevelMin, LevelMax].
	PhysMin float64 `json:"phys_min_m"`
	PhysMax float64 `json:"phys_max_m"`

	Pumps []Pump `json:"pumps"`
	MaxOn int    `json:"max_on"` // pumps allowed to run at once (pure binary row)

	WTrack    float64 `json:"w_track"`    // w_h
	WTerminal float64 `json:"w_terminal"` // w_N

	// DemandMax and PriceMax bound forecast values in measurements; larger values are taken as a
	// sensor or unit error rather than planned for.
	DemandMax float64 `json:"demand_max_m3h"`
	PriceMax  float64 `json:"price_max_eur_kwh"`

	// SafeHold (default true) makes the safe action, applied when no plan is left, a level-holding
	// rule computed from the measurement (Family.SafeActionFor): the pumps that bring the level
	// back to level_ref in one step given the first step's demand, as far as they can. With
	// safe_hold false the safe action is the fixed SafeOn and SafeFlow (every pump off by default);
	// the daemon's safe_action setting sets those and turns safe_hold off. A fixed "all off" drains
	// a supply tank within a few periods if the solver stays down.
	SafeHold bool `json:"safe_hold"`
	// SafeOn and SafeFlow are the fixed safe action. A running pump's flow must lie in [q_min, q_max].
	// Left out (nil), the fixed safe action is every pump off.
	SafeOn   []int     `json:"safe_pumps_on"`
	SafeFlow []float64 `json:"safe_flow_m3h"`

	// MaxEnumerate caps the size of Y_pb that is enumerated (0: gbd.DefaultMaxAdmissible, 262,144).
	// A larger space is kept implicit, as its rows K y ≤ b: it needs the cbc master and a policy
	// that proposes assignments directly (see doc.go, "Sizes").
	MaxEnumerate int `json:"max_enumerate,omitempty"`
}

// ExtraPumps are pumps 4 and 5 of the spec's larger stations ("Sizes").
var ExtraPumps = []Pump{
	{QMin: 25, QMax: 75, E: 0.095, F: 3.30, RunCost: 0.22, StartCost: 1.2},
	{QMin: 40, QMax: 120, E: 0.085, F: 4.40, RunCost: 0.28, StartCost: 1.8},
}

// Sizes are the binaries of the spec's reference stations and of the 60-binary station beyond its
// table, SizedConfig's arguments.
var Sizes = []int{12, 24, 40, 60}

// SizedConfig is the spec's reference station with the given number of binaries (table "Sizes"):
// 12 is DefaultConfig (3 pumps × 4 blocks of 4 steps), 24 is 4 pumps × 6 blocks of 4 steps
// (N = 24), 40 is 5 pumps × 8 blocks of 2 steps (N = 16); at most two pumps run in every size.
// 60, the top of the spec's "24–60 binaries" and not in its table, is the 40-binary station's pumps
// over 12 blocks of 2 steps (N = 24, the 24-binary station's six hours).
func SizedConfig(binaries int) (Config, error) {
	c := DefaultConfig()
	switch binaries {
	case 12:
	case 24:
		c.Pumps = append(c.Pumps, ExtraPumps[0])
		c.Blocks, c.Horizon = 6, 24
	case 40:
		c.Pumps = append(c.Pumps, ExtraPumps...)
		c.Blocks, c.Horizon = 8, 16
	case 60:
		c.Pumps = append(c.Pumps, ExtraPumps...)
		c.Blocks, c.Horizon = 12, 24
	default:
		return Config{}, fmt.Errorf("%w: no reference station with %d binaries (have %v)", ErrConfig, binaries, Sizes)
	}
	return c, nil
}

// DefaultConfig returns the spec's numbers.
func DefaultConfig() Config {
	return Config{
		Area: 50, Dt: 0.25, Horizon: 16, Blocks: 4,
		LevelMin: 1, LevelMax: 5, LevelRef: 3,
		PhysMin: 0, PhysMax: 6,
		Pumps: []Pump{
			{QMin: 20, QMax: 60, E: 0.100, F: 3.00, RunCost: 0.20, StartCost: 1.0},
			{QMin: 30, QMax: 90, E: 0.090, F: 3.60, RunCost: 0.25, StartCost: 1.5},
			{QMin: 50, QMax: 150, E: 0.080, F: 5.25, RunCost: 0.30, StartCost: 2.0},
		},
		MaxOn:  2,
		WTrack: 0.5, WTerminal: 5,
		DemandMax: 1000, PriceMax: 10,
		SafeHold: true,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid pumpstation config")

// Validate checks that the configuration describes a well-posed family: positive physical
// constants, a horizon divisible into blocks, nested level ranges, and pump data for which the
// power curve is convex and the semi-continuous bounds are non-empty.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	fin := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"area_m2", c.Area}, {"dt_h", c.Dt}, {"demand_max_m3h", c.DemandMax}, {"price_max_eur_kwh", c.PriceMax},
	} {
		if !fin(f.v) || f.v <= 0 {
			return bad("%s must be positive and finite, got %v", f.name, f.v)
		}
	}
	if c.Horizon < 1 || c.Blocks < 1 || c.Horizon%c.Blocks != 0 {
		return bad("horizon %d must be a positive multiple of blocks %d", c.Horizon, c.Blocks)
	}
	for _, v := range []float64{c.LevelMin, c.LevelMax, c.LevelRef, c.PhysMin, c.PhysMax, c.WTrack, c.WTerminal} {
		if !fin(v) {
			return bad("level limits, physical range and weights must be finite")
		}
	}
	if !(c.PhysMin <= c.LevelMin && c.LevelMin < c.LevelMax && c.LevelMax <= c.PhysMax) {
		return bad("need phys_min ≤ level_min < level_max ≤ phys_max, got %v ≤ %v < %v ≤ %v",
			c.PhysMin, c.LevelMin, c.LevelMax, c.PhysMax)
	}
	if c.LevelRef < c.LevelMin || c.LevelRef > c.LevelMax {
		return bad("level_ref_m %v outside [%v, %v]", c.LevelRef, c.LevelMin, c.LevelMax)
	}
	if c.WTrack < 0 || c.WTerminal < 0 {
		return bad("w_track and w_terminal must be ≥ 0")
	}
	if len(c.Pumps) == 0 {
		return bad("at least one pump is required")
	}
	for i, p := range c.Pumps {
		for _, v := range []float64{p.QMin, p.QMax, p.E, p.F, p.RunCost, p.StartCost} {
			if !fin(v) || v < 0 {
				return bad("pump %d: every number must be finite and ≥ 0", i+1)
			}
		}
		if p.QMax <= 0 || p.QMin > p.QMax {
			return bad("pump %d: need 0 ≤ q_min ≤ q_max and q_max > 0, got [%v, %v]", i+1, p.QMin, p.QMax)
		}
	}
	if c.MaxOn < 1 {
		return bad("max_on must be ≥ 1, got %d", c.MaxOn)
	}
	if c.MaxEnumerate < 0 {
		return bad("max_enumerate must be ≥ 0, got %d", c.MaxEnumerate)
	}
	if c.SafeOn == nil && c.SafeFlow == nil {
		return nil // every pump off
	}
	if len(c.SafeOn) != len(c.Pumps) || len(c.SafeFlow) != len(c.Pumps) {
		return bad("safe_pumps_on and safe_flow_m3h need one value per pump (%d), got %d and %d", len(c.Pumps), len(c.SafeOn), len(c.SafeFlow))
	}
	for i, on := range c.SafeOn {
		if err := c.checkMove(i, on, c.SafeFlow[i]); err != nil {
			return bad("safe action, pump %d: %v", i, err)
		}
	}
	return nil
}

// NP is the number of pumps.
func (c *Config) NP() int { return len(c.Pumps) }

// BlockLen is the number of steps per move block.
func (c *Config) BlockLen() int { return c.Horizon / c.Blocks }

// NX is the number of continuous variables: q[p,t], h[t] and s[p,b].
func (c *Config) NX() int { return c.NP()*c.Horizon + c.Horizon + c.NP()*c.Blocks }

// NY is the number of binaries y[p,b].
func (c *Config) NY() int { return c.NP() * c.Blocks }

// Variable layout. Pumps p and blocks b are 0-based here; steps t are 0-based for flows
// (t = 0..N−1) and 1-based for levels (t = 1..N), as in the spec.

// QIndex is the position of q[p,t] in x.
func (c *Config) QIndex(p, t int) int { return p*c.Horizon + t }

// HIndex is the position of h[t], t = 1..N, in x.
func (c *Config) HIndex(t int) int { return c.NP()*c.Horizon + t - 1 }

// SIndex is the position of s[p,b] in x.
func (c *Config) SIndex(p, b int) int { return c.NP()*c.Horizon + c.Horizon + p*c.Blocks + b }

// YIndex is the position of y[p,b] in y: pump-major, p·B + b.
func (c *Config) YIndex(p, b int) int { return p*c.Blocks + b }

// BlockOf is the block b(t) that step t (0-based) belongs to.
func (c *Config) BlockOf(t int) int { return t / c.BlockLen() }

// checkMove says what is wrong with running pump p (0-based) in state on at flow q, m³/h: a state
// other than 0 or 1, a flow that is not finite, a running pump outside [q_min, q_max], or a flow
// for a pump that is off. Safe actions and decoded plans are held to it.
func (c *Config) checkMove(p, on int, q float64) error {
	pump := c.Pumps[p]
	switch {
	case on != 0 && on != 1:
		return fmt.Errorf("state %d is not 0 or 1", on)
	case math.IsNaN(q) || math.IsInf(q, 0):
		return fmt.Errorf("flow %v is not finite", q)
	case on == 1 && (q < pump.QMin || q > pump.QMax):
		return fmt.Errorf("runs at %v m³/h, outside [%v, %v]", q, pump.QMin, pump.QMax)
	case on == 0 && q != 0:
		return fmt.Errorf("is off with flow %v", q)
	}
	return nil
}
