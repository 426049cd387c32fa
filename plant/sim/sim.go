package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gbdmpc/plant/pumpstation"
	"gbdmpc/wire"
)

// Config is one simulated pump station: the plant the controller models, the day it lives through,
// and how the real plant differs from the model. DefaultConfig gives the spec's testbed.
type Config struct {
	Plant   pumpstation.Config  `json:"plant"`
	Profile pumpstation.Profile `json:"profile"`
	Seed    uint64              `json:"seed"`

	StartHour float64 `json:"start_hour"` // time of day of the first measurement
	Level0    float64 `json:"level0_m"`   // initial level
	PumpsOn0  []int   `json:"pumps_on0"`  // initial pump states
	Epoch     int64   `json:"epoch_ms"`   // plant time of the first measurement, Unix ms (ts_ms)

	// Mismatch is δ_p per pump: actual flow = commanded × (1 + δ_p). Nil draws each δ_p uniformly
	// from [−MismatchMax, MismatchMax] with the seed.
	Mismatch    []float64 `json:"mismatch"`
	MismatchMax float64   `json:"mismatch_max"`
	// The actual demand is the forecast plus AR(1) noise e[k] = ρ·e[k−1] + √(1−ρ²)·σ·w[k], w
	// standard normal: σ is the noise's stationary standard deviation, ρ its step-to-step
	// correlation. σ = 0 makes the forecast exact.
	NoiseSigma float64 `json:"noise_sigma_m3h"`
	NoiseRho   float64 `json:"noise_rho"`
}

// DefaultConfig is the spec's testbed: the default plant and day, starting at midnight with the
// tank at its reference and every pump off, mismatch drawn in ±3 %, noise σ = 8 m³/h, ρ = 0.8.
func DefaultConfig() Config { return ConfigFor(pumpstation.DefaultConfig()) }

// ConfigFor is DefaultConfig's testbed around another station (a configured size): the same day,
// noise and mismatch, starting at its reference level with every pump off.
func ConfigFor(pc pumpstation.Config) Config {
	return Config{
		Plant: pc, Profile: pumpstation.DefaultProfile(), Seed: 1,
		StartHour: 0, Level0: pc.LevelRef, PumpsOn0: make([]int, pc.NP()),
		Epoch:       time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		MismatchMax: 0.03, NoiseSigma: 8, NoiseRho: 0.8,
	}
}

// ErrConfig is wrapped by every simulator configuration error.
var ErrConfig = errors.New("invalid simulator config")

// Validate checks the plant, the profile and the disturbance settings.
func (c *Config) Validate() error {
	if err := c.Plant.Validate(); err != nil {
		return err
	}
	if err := c.Profile.Validate(); err != nil {
		return err
	}
	fin := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !fin(c.StartHour):
		return fmt.Errorf("%w: start_hour is not finite", ErrConfig)
	case !fin(c.Level0) || c.Level0 < c.Plant.PhysMin || c.Level0 > c.Plant.PhysMax:
		return fmt.Errorf("%w: level0_m %v outside the physical range [%v, %v]", ErrConfig, c.Level0, c.Plant.PhysMin, c.Plant.PhysMax)
	case len(c.PumpsOn0) != c.Plant.NP():
		return fmt.Errorf("%w: pumps_on0 has %d values, want %d", ErrConfig, len(c.PumpsOn0), c.Plant.NP())
	case c.Mismatch != nil && len(c.Mismatch) != c.Plant.NP():
		return fmt.Errorf("%w: mismatch has %d values, want %d", ErrConfig, len(c.Mismatch), c.Plant.NP())
	case !fin(c.MismatchMax) || c.MismatchMax < 0 || c.MismatchMax >= 1:
		return fmt.Errorf("%w: mismatch_max must lie in [0, 1), got %v", ErrConfig, c.MismatchMax)
	case !fin(c.NoiseSigma) || c.NoiseSigma < 0:
		return fmt.Errorf("%w: noise_sigma_m3h must be finite and ≥ 0", ErrConfig)
	case !fin(c.NoiseRho) || c.NoiseRho < 0 || c.NoiseRho >= 1:
		return fmt.Errorf("%w: noise_rho must lie in [0, 1)", ErrConfig)
	}
	for i, v := range c.PumpsOn0 {
		if v != 0 && v != 1 {
			return fmt.Errorf("%w: pumps_on0[%d] = %d, want 0 or 1", ErrConfig, i, v)
		}
	}
	for i, d := range c.Mismatch {
		if !fin(d) || d <= -1 {
			return fmt.Errorf("%w: mismatch[%d] = %v, want > −1", ErrConfig, i, d)
		}
	}
	return nil
}

// Simulator is the plant: it integrates the true dynamics (with mismatch and demand noise), keeps
// the level within the tank physically, and produces each period's measurement. It is
// deterministic for a given Config.
type Simulator struct {
	cfg   Config
	rng   *rand.Rand
	delta []float64
	noise float64 // AR(1) state, m³/h
	step  int
	level float64
	on    []int
	seq   uint64

	// Volumes since the start, m³: what the pumps delivered, what the consumers drew, what
	// overflowed at the top and what could not be served at the bottom.
	Inflow, Drawn, Overflow, Unserved float64
}

// New validates cfg and starts the plant at its initial state.
func New(cfg Config) (*Simulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Simulator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), level: cfg.Level0,
		on: append([]int(nil), cfg.PumpsOn0...)}
	s.delta = append([]float64(nil), cfg.Mismatch...)
	if s.delta == nil {
		s.delta = make([]float64, cfg.Plant.NP())
		for p := range s.delta {
			s.delta[p] = cfg.MismatchMax * (2*s.rng.Float64() - 1)
		}
	}
	// Start the noise in its stationary distribution so the first hours look like the rest.
	s.noise = cfg.NoiseSigma * s.rng.NormFloat64()
	return s, nil
}

// Mismatch is the δ_p in use.
func (s *Simulator) Mismatch() []float64 { return append([]float64(nil), s.delta...) }

// Level is the current level.
func (s *Simulator) Level() float64 { return s.level }

// StepIndex is the number of periods simulated so far.
func (s *Simulator) StepIndex() int { return s.step }

// Hour is the time of day at the start of the current period, in hours.
func (s *Simulator) Hour() float64 {
	h := math.Mod(s.cfg.StartHour+float64(s.step)*s.cfg.Plant.Dt, 24)
	if h < 0 {
		h += 24
	}
	return h
}

// Instance is the current measurement's instance fields: level, pump states and the forecasts
// read off the daily profile from the current time of day.
func (s *Simulator) Instance() pumpstation.Instance {
	c := &s.cfg.Plant
	d, pr := s.cfg.Profile.Forecast(c, s.Hour())
	for t := range d {
		d[t] = math.Min(d[t], c.DemandMax)
		pr[t] = math.Min(pr[t], c.PriceMax)
	}
	return pumpstation.Instance{V: 1, Level: s.level, PumpsOn: append([]int(nil), s.on...), Demand: d, Price: pr}
}

// Measurement is the current measurement as the daemon receives it: the instance fields plus
// "seq" (increasing from 1) and "ts_ms" (plant time).
func (s *Simulator) Measurement() []byte {
	s.seq++
	b, _ := wire.Measurement(s.seq, s.tsMs(), s.Instance()) // an Instance always marshals
	return b
}

func (s *Simulator) tsMs() int64 {
	return s.cfg.Epoch + int64(math.Round(float64(s.step)*s.cfg.Plant.Dt*3600e3))
}

// Transition is what happened during one period.
type Transition struct {
	Step           int
	TimeH          float64 // plant time at the start of the period, hours since the start
	Hour           float64 // time of day at the start of the period
	LevelStart     float64
	LevelEnd       float64 // after physical clamping
	DemandForecast float64 // the measurement's demand[0]
	DemandActual   float64
	Price          float64
	On             []int
	FlowCmd        []float64 // what the pumps were told (after the pump's own limits)
	FlowActual     []float64
	Starts         int
	EnergyKWh      float64
	CostEUR        float64 // energy, running and starts, at the commanded flows
	Clamped        bool    // the tank overflowed or ran dry
	Violation      bool    // LevelEnd outside the operating limits
}

// Step applies pump states and commanded flows for one period Δt and advances the plant. A running
// pump runs within its [q_min, q_max] whatever it is told; a stopped one delivers nothing.
func (s *Simulator) Step(on []int, flow []float64) (Transition, error) {
	c := &s.cfg.Plant
	if len(on) != c.NP() || len(flow) != c.NP() {
		return Transition{}, fmt.Errorf("sim: got %d pump states and %d flows, want %d", len(on), len(flow), c.NP())
	}
	hour := s.Hour()
	forecast := math.Min(s.cfg.Profile.Demand(hour+c.Dt/2), c.DemandMax)
	tr := Transition{Step: s.step, TimeH: float64(s.step) * c.Dt, Hour: hour, LevelStart: s.level, DemandForecast: forecast,
		Price: math.Min(s.cfg.Profile.Price(hour), c.PriceMax),
		On:    make([]int, c.NP()), FlowCmd: make([]float64, c.NP()), FlowActual: make([]float64, c.NP())}
	total := 0.0
	for p, pump := range c.Pumps {
		if on[p] == 0 {
			continue
		}
		q := math.Min(math.Max(flow[p], pump.QMin), pump.QMax)
		tr.On[p], tr.FlowCmd[p] = 1, q
		tr.FlowActual[p] = q * (1 + s.delta[p])
		total += tr.FlowActual[p]
		kwh := pump.Power(q) * c.Dt
		tr.EnergyKWh += kwh
		tr.CostEUR += tr.Price*kwh + pump.RunCost*c.Dt
		if s.on[p] == 0 {
			tr.Starts++
			tr.CostEUR += pump.StartCost
		}
	}
	tr.DemandActual = math.Max(0, forecast+s.noise)
	s.noise = s.cfg.NoiseRho*s.noise + math.Sqrt(1-s.cfg.NoiseRho*s.cfg.NoiseRho)*s.cfg.NoiseSigma*s.rng.NormFloat64()

	s.Inflow += total * c.Dt
	s.Drawn += tr.DemandActual * c.Dt
	h := s.level + c.Dt/c.Area*(total-tr.DemandActual)
	switch {
	case h > c.PhysMax:
		s.Overflow += (h - c.PhysMax) * c.Area
		h, tr.Clamped = c.PhysMax, true
	case h < c.PhysMin:
		s.Unserved += (c.PhysMin - h) * c.Area
		h, tr.Clamped = c.PhysMin, true
	}
	tr.LevelEnd = h
	tr.Violation = h < c.LevelMin || h > c.LevelMax
	s.level = h
	copy(s.on, tr.On)
	s.step++
	return tr, nil
}
