package pumpstation

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Peak is one bump of the daily demand curve: Amp·exp(−½·(dist(hour, Hour)/Width)²), where dist
// wraps around midnight.
type Peak struct {
	Hour  float64 `json:"hour"`
	Width float64 `json:"width_h"`
	Amp   float64 `json:"amp_m3h"`
}

// Window is a half-open interval of the day [From, To) in hours, both in [0, 24]; To < From wraps
// past midnight.
type Window struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
}

func (w Window) contains(h float64) bool {
	if w.From <= w.To {
		return h >= w.From && h < w.To
	}
	return h >= w.From || h < w.To
}

// Profile is the daily shape of demand and the time-of-use tariff. Forecasts in sampled instances
// and in the simulator's measurements are read off it; the simulator adds noise to get the actual
// demand.
type Profile struct {
	DemandBase float64  `json:"demand_base_m3h"`
	Peaks      []Peak   `json:"peaks"`
	PriceOff   float64  `json:"price_off_eur_kwh"`
	PricePeak  float64  `json:"price_peak_eur_kwh"`
	PeakHours  []Window `json:"peak_hours"`
}

// DefaultProfile is a residential day: a night base near 45 m³/h, a morning peak around 07:30, a
// shallow midday bump and the evening peak around 19:30 (maximum about 155 m³/h), with the tariff at
// 0.35 €/kWh from 07:00 to 11:00 and from 17:00 to 21:00 and 0.12 €/kWh otherwise.
func DefaultProfile() Profile {
	return Profile{
		DemandBase: 45,
		Peaks: []Peak{
			{Hour: 7.5, Width: 1.5, Amp: 105},
			{Hour: 13, Width: 2.5, Amp: 35},
			{Hour: 19.5, Width: 2, Amp: 110},
		},
		PriceOff: 0.12, PricePeak: 0.35,
		PeakHours: []Window{{From: 7, To: 11}, {From: 17, To: 21}},
	}
}

// ErrProfile is wrapped by every profile validation error.
var ErrProfile = errors.New("invalid demand/price profile")

// Validate checks that the profile gives finite, non-negative demand and prices.
func (p *Profile) Validate() error {
	if !finite(p.DemandBase) || p.DemandBase < 0 {
		return fmt.Errorf("%w: demand_base_m3h must be finite and ≥ 0", ErrProfile)
	}
	for i, k := range p.Peaks {
		if !finite(k.Hour) || !finite(k.Amp) || !finite(k.Width) || k.Width <= 0 || k.Amp < 0 {
			return fmt.Errorf("%w: peak %d needs finite hour, positive width and amp ≥ 0", ErrProfile, i)
		}
	}
	if !finite(p.PriceOff) || !finite(p.PricePeak) || p.PriceOff < 0 || p.PricePeak < 0 {
		return fmt.Errorf("%w: prices must be finite and ≥ 0", ErrProfile)
	}
	for i, w := range p.PeakHours {
		if !(w.From >= 0 && w.From <= 24 && w.To >= 0 && w.To <= 24) {
			return fmt.Errorf("%w: peak window %d must lie in [0, 24] h", ErrProfile, i)
		}
	}
	return nil
}

// hourOfDay folds any time in hours into [0, 24).
func hourOfDay(h float64) float64 {
	h = math.Mod(h, 24)
	if h < 0 {
		h += 24
	}
	return h
}

// Demand is the profile's demand at a time of day (hours; any real number, folded into a day).
func (p *Profile) Demand(hour float64) float64 {
	h := hourOfDay(hour)
	d := p.DemandBase
	for _, k := range p.Peaks {
		dist := math.Abs(h - hourOfDay(k.Hour))
		dist = math.Min(dist, 24-dist)
		z := dist / k.Width
		d += k.Amp * math.Exp(-0.5*z*z)
	}
	return d
}

// Price is the tariff in force at a time of day.
func (p *Profile) Price(hour float64) float64 {
	h := hourOfDay(hour)
	for _, w := range p.PeakHours {
		if w.contains(h) {
			return p.PricePeak
		}
	}
	return p.PriceOff
}

// Forecast returns N-step demand and price forecasts for a horizon starting at the given time of
// day. Step t covers [hour + t·Δt, hour + (t+1)·Δt): its demand is the profile at the step's
// midpoint, its price the tariff at the step's start (tariffs change on the hour, on a step edge).
func (p *Profile) Forecast(c *Config, hour float64) (demand, price []float64) {
	demand = make([]float64, c.Horizon)
	price = make([]float64, c.Horizon)
	for t := range c.Horizon {
		t0 := hour + float64(t)*c.Dt
		demand[t] = p.Demand(t0 + c.Dt/2)
		price[t] = p.Price(t0)
	}
	return demand, price
}

// Sampling ranges for random instances.
var (
	// SampleLevel is the range of initial levels; it keeps clear of the hard limits so that most
	// sampled instances are feasible while some on/off plans are not.
	SampleLevel = [2]float64{1.5, 4.5}
	// SampleScale scales the whole demand forecast, so that days differ.
	SampleScale = [2]float64{0.9, 1.1}
	// SamplePumpOn is the chance that each pump is measured running (states with more than MaxOn
	// pumps running are redrawn: the controller never commands them).
	SamplePumpOn = 0.35
)

// Sample draws an instance at a random time of day (on the step grid) with a randomly scaled
// forecast, a random level and random pump states.
func Sample(rng *rand.Rand, c *Config, prof *Profile) Instance {
	steps := int(math.Round(24 / c.Dt))
	hour := float64(rng.IntN(max(steps, 1))) * c.Dt
	return SampleAt(rng, c, prof, hour)
}

// SampleAt is Sample at a given time of day.
func SampleAt(rng *rand.Rand, c *Config, prof *Profile, hour float64) Instance {
	u := func(r [2]float64) float64 { return r[0] + (r[1]-r[0])*rng.Float64() }
	demand, price := prof.Forecast(c, hour)
	scale := u(SampleScale)
	for t := range demand {
		demand[t] = math.Min(demand[t]*scale, c.DemandMax)
		price[t] = math.Min(price[t], c.PriceMax)
	}
	lvl := [2]float64{math.Max(SampleLevel[0], c.LevelMin), math.Min(SampleLevel[1], c.LevelMax)}
	in := Instance{V: 1, Level: u(lvl), PumpsOn: make([]int, c.NP()), Demand: demand, Price: price}
	for {
		on := 0
		for p := range in.PumpsOn {
			in.PumpsOn[p] = 0
			if rng.Float64() < SamplePumpOn {
				in.PumpsOn[p] = 1
				on++
			}
		}
		if on <= c.MaxOn {
			return in
		}
	}
}
