package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"gbdmpc/mpc"
)

// SimConfig is the simulated plant of a model: the model's own dynamics driven by forecasts that
// come true only up to noise.
type SimConfig struct {
	Seed uint64
	// Noise is the standard deviation of each forecast's error, as a fraction of its typical range's
	// width (default 0.05); Rho the error's AR(1) coefficient from step to step (default 0.8).
	Noise, Rho float64
}

// Sim is a simulated plant of a model. Its measurement is always a valid instance: states clamped
// to their physical range, forecasts to theirs.
type Sim struct {
	fam  *Family
	cfg  SimConfig
	rng  *rand.Rand
	in   Instance
	err  []float64 // per forecast, the AR(1) error of its current step
	seq  uint64
	Hard int // steps whose end state broke a hard limit
}

// NewSim starts a simulated plant at a sampled instance of the model.
func NewSim(fam *Family, cfg SimConfig) *Sim {
	if cfg.Noise == 0 {
		cfg.Noise = 0.05
	}
	if cfg.Rho == 0 {
		cfg.Rho = 0.8
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 37))
	return &Sim{fam: fam, cfg: cfg, rng: rng, in: fam.m.Sample(rng), err: make([]float64, len(fam.m.Forecasts))}
}

// Measurement is the plant's current measurement payload, numbered (seq) but without a time.
func (s *Sim) Measurement() []byte {
	s.seq++
	raw := s.fam.m.MarshalInstance(&s.in)
	return append([]byte(fmt.Sprintf(`{"seq":%d,`, s.seq)), raw[1:]...)
}

// MeasurementAt is the plant's current measurement payload as sent over MQTT: numbered and
// stamped with ts_ms.
func (s *Sim) MeasurementAt(tsMs int64) (payload []byte, seq uint64) {
	s.seq++
	raw := s.fam.m.MarshalInstance(&s.in)
	return append([]byte(fmt.Sprintf(`{"seq":%d,"ts_ms":%d,`, s.seq, tsMs)), raw[1:]...), s.seq
}

// SimStep is what the plant did in one step.
type SimStep struct {
	Start    []float64 // states at the start of the step, as measured
	States   []float64 // at the end of the step
	Inputs   []float64
	On       []int
	Forecast []float64 // each forecast's value for the step, as the measurement carried it
	Actual   []float64 // each forecast's value that came true
	Breaches []string  // hard limits broken at the end of the step
	Cost     float64   // Family.StepCost
}

// Step applies an action for one step: the actual forecast values are the first forecast values
// plus the AR(1) error, the states follow the model's dynamics, and the forecasts move on one
// step with a new last value drawn near the previous one.
func (s *Sim) Step(apply mpc.Action) (SimStep, error) {
	m := s.fam.m
	inputs, on, err := s.fam.DecodeApply(apply)
	if err != nil {
		return SimStep{}, err
	}
	st := SimStep{Start: s.in.States, Inputs: inputs, On: on, Forecast: make([]float64, len(m.Forecasts)), Actual: make([]float64, len(m.Forecasts))}
	for i, f := range m.Forecasts {
		st.Forecast[i] = s.in.Forecasts[i][0]
		w := f.TypHi - f.TypLo
		s.err[i] = s.cfg.Rho*s.err[i] + math.Sqrt(1-s.cfg.Rho*s.cfg.Rho)*s.cfg.Noise*w*s.rng.NormFloat64()
		st.Actual[i] = math.Min(math.Max(s.in.Forecasts[i][0]+s.err[i], f.Lo), f.Hi)
	}
	next := make([]float64, len(m.States))
	for k, x := range m.States {
		v := x.Const
		for _, c := range x.Next {
			r := m.names[c.Name]
			switch r.kind {
			case kindState:
				v += c.Value * s.in.States[r.idx]
			case kindInput:
				v += c.Value * inputs[r.idx]
			case kindForecast:
				v += c.Value * st.Actual[r.idx]
			}
		}
		next[k] = math.Min(math.Max(v, x.Lo), x.Hi)
		if x.HasMin && next[k] < x.Min-violationTol {
			st.Breaches = append(st.Breaches, "min_"+x.Name)
		}
		if x.HasMax && next[k] > x.Max+violationTol {
			st.Breaches = append(st.Breaches, "max_"+x.Name)
		}
	}
	if len(st.Breaches) > 0 {
		s.Hard++
	}
	st.States = next
	st.Cost = s.fam.StepCost(s.in.On, &st)
	s.in.States, s.in.On = next, on
	for i, f := range m.Forecasts {
		v := s.in.Forecasts[i]
		last := v[len(v)-1] + s.cfg.Noise*(f.TypHi-f.TypLo)*s.rng.NormFloat64()
		s.in.Forecasts[i] = append(v[1:len(v):len(v)], math.Min(math.Max(last, f.TypLo), f.TypHi))
	}
	return st, nil
}

// LoopRecord is one step of a closed loop.
type LoopRecord struct {
	SimStep
	Status       string
	Objective    float64
	Iterations   int
	SolveSeconds float64
	Carried      int
	Relaxed      bool
}

// LoopOptions configure a closed loop of a model plant.
type LoopOptions struct {
	Sim   SimConfig
	MPC   mpc.Options // master, policy, NLP, GBD settings
	Steps int
	// Budget is each step's deadline from its measurement (0: a minute).
	Budget time.Duration
	// OnStep, if set, is called after every step (progress output).
	OnStep func(LoopRecord)
	// Log, if set, hears every step's start and decision: a decision log (the daemon's step
	// recorder), whose engine recorder must be MPC.Recorder.
	Log StepLog
}

// StepLog is a decision log of the loop's steps.
type StepLog interface {
	BeginStep(seq uint64, instance json.RawMessage)
	FinishStep(d *mpc.Decision)
}

// RunLoop closes the loop for o.Steps periods: each measurement goes through DecodeMeasurement as
// over MQTT, the controller decides within the budget, and the plant applies the action.
func RunLoop(ctx context.Context, fam *Family, o LoopOptions) ([]LoopRecord, *Sim, error) {
	if o.Steps < 1 {
		return nil, nil, fmt.Errorf("model: a closed loop needs at least one step, got %d", o.Steps)
	}
	budget := o.Budget
	if budget <= 0 {
		budget = time.Minute
	}
	ctrl, err := mpc.NewController(fam, o.MPC)
	if err != nil {
		return nil, nil, err
	}
	s := NewSim(fam, o.Sim)
	var recs []LoopRecord
	for k := range o.Steps {
		if err := ctx.Err(); err != nil {
			return recs, s, err
		}
		meas, err := fam.DecodeMeasurement(s.Measurement())
		if err != nil {
			return recs, s, fmt.Errorf("the simulated plant's measurement was refused: %w", err)
		}
		if o.Log != nil {
			o.Log.BeginStep(uint64(k+1), meas.Instance())
		}
		d, err := ctrl.Step(meas, time.Now().Add(budget))
		if err != nil {
			return recs, s, err
		}
		if o.Log != nil {
			o.Log.FinishStep(&d)
		}
		st, err := s.Step(d.Apply)
		if err != nil {
			return recs, s, fmt.Errorf("the plant refused the action %s: %w", d.Apply, err)
		}
		r := LoopRecord{SimStep: st, Status: d.Status, Objective: d.Objective, Iterations: d.Iterations,
			SolveSeconds: d.SolveSeconds, Carried: d.Carry.Carried, Relaxed: d.Relaxed != nil}
		recs = append(recs, r)
		if o.OnStep != nil {
			o.OnStep(r)
		}
	}
	return recs, s, nil
}

// WriteCSV writes the loop's steps: status and solve figures, the step's cost, then every state,
// input, unit and actual forecast by name.
func (f *Family) WriteCSV(w io.Writer, recs []LoopRecord) error {
	m := f.m
	head := []string{"step", "status", "relaxed", "objective", "iterations", "solve_seconds", "carried_cuts", "breaches", "cost"}
	for _, x := range m.States {
		head = append(head, x.Name)
	}
	for _, x := range m.Inputs {
		head = append(head, x.Name)
	}
	for _, x := range m.Units {
		head = append(head, x.Name)
	}
	for _, x := range m.Forecasts {
		head = append(head, x.Name)
	}
	var b strings.Builder
	b.WriteString(strings.Join(head, ",") + "\n")
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for k, r := range recs {
		row := []string{strconv.Itoa(k), r.Status, strconv.FormatBool(r.Relaxed), g(r.Objective), strconv.Itoa(r.Iterations),
			g(r.SolveSeconds), strconv.Itoa(r.Carried), strings.Join(r.Breaches, " "), g(r.Cost)}
		for _, v := range r.States {
			row = append(row, g(v))
		}
		for _, v := range r.Inputs {
			row = append(row, g(v))
		}
		for _, v := range r.On {
			row = append(row, strconv.Itoa(v))
		}
		for _, v := range r.Actual {
			row = append(row, g(v))
		}
		b.WriteString(strings.Join(row, ",") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// LoopSummary condenses a closed loop.
type LoopSummary struct {
	V     int    `json:"v"`
	Model string `json:"model"`
	Steps int    `json:"steps"`
	// Cost is the sum of the steps' StepCost, in the model's cost unit.
	Cost     float64        `json:"cost"`
	Statuses map[string]int `json:"statuses"`
	// Certified counts the steps whose decision was proven optimal (gap within ε) in time.
	Certified       int     `json:"certified"`
	Relaxed         int     `json:"relaxed"`
	HardBreaches    int     `json:"hard_breaches"`
	MeanIterations  float64 `json:"mean_iterations"`
	MeanSolveSecond float64 `json:"mean_solve_seconds"`
	P50SolveSeconds float64 `json:"p50_solve_seconds"`
	P95SolveSeconds float64 `json:"p95_solve_seconds"`
	MaxSolveSeconds float64 `json:"max_solve_seconds"`
}

// Summarize condenses recs.
func (f *Family) Summarize(recs []LoopRecord) LoopSummary {
	sm := LoopSummary{V: 1, Model: f.m.Name, Steps: len(recs), Statuses: map[string]int{}}
	times := make([]float64, 0, len(recs))
	for _, r := range recs {
		if len(r.Breaches) > 0 {
			sm.HardBreaches++
		}
		sm.Cost += r.Cost
		sm.Statuses[r.Status]++
		if r.Status == mpc.StatusOptimal {
			sm.Certified++
		}
		times = append(times, r.SolveSeconds)
		if r.Relaxed {
			sm.Relaxed++
		}
		sm.MeanIterations += float64(r.Iterations)
		sm.MeanSolveSecond += r.SolveSeconds
		sm.MaxSolveSeconds = math.Max(sm.MaxSolveSeconds, r.SolveSeconds)
	}
	if n := float64(len(recs)); n > 0 {
		sm.MeanIterations /= n
		sm.MeanSolveSecond /= n
		sort.Float64s(times)
		sm.P50SolveSeconds, sm.P95SolveSeconds = quantile(times, 0.5), quantile(times, 0.95)
	}
	return sm
}

// quantile of sorted values by linear interpolation between order statistics.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}
