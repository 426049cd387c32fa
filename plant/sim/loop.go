package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// DefaultStepBudget is LoopOptions.StepBudget's default: the wall-clock time each control step may
// take. The plant period is 15 minutes; the simulation runs as fast as the solves allow.
const DefaultStepBudget = 5 * time.Second

// LoopOptions configure a closed-loop run: controller and simulated plant in one process, the
// measurement and action going through the same JSON as over MQTT.
type LoopOptions struct {
	Sim   Config      // the plant (DefaultConfig for the spec's testbed)
	Steps int         // control periods to run (96 = one day)
	MPC   mpc.Options // master, policy, NLP, GBD settings; Clock also times the step budgets
	// StepBudget is each step's deadline from the moment its measurement is taken (default
	// DefaultStepBudget).
	StepBudget time.Duration
	// OutDir, if set, receives steps.csv, summary.json, summary.txt and figure.png.
	OutDir string
	// OnStep, if set, is called after every step (progress output).
	OnStep func(StepRecord)
	// Log, if set, hears every step's start and decision: a decision log (controller.StepRecorder),
	// whose engine recorder must be MPC.Recorder.
	Log StepLog
	// Controller, if set, is the family the controller plans with instead of the built-in
	// station's: a model of the station (plant/model, station_model.go), which then runs on
	// exactly the day the built-in family would.
	Controller mpc.Family
}

// StepLog is a decision log of the loop's steps.
type StepLog interface {
	BeginStep(seq uint64, instance json.RawMessage)
	FinishStep(d *mpc.Decision)
}

// StepRecord is one control period: the measurement, the decision and what the plant did.
type StepRecord struct {
	Transition
	Status       string
	Reason       string
	Objective    float64
	LBD, UBD     float64
	Iterations   int
	SolveSeconds float64
	// MasterSeconds and NLPSeconds split the GBD time of the solve whose result the step reports
	// (the soft one when the action was relaxed).
	MasterSeconds, NLPSeconds float64
	Agent                     gbd.AgentStats
	Safe                      bool
	// Carried is the number of cuts of earlier steps the solve started with.
	Carried int
	// Relaxed is set when the action was the soft problem's optimum: the forecast could not be
	// served within the level limits (mpc.Relaxation). The plant applies it like any other action.
	Relaxed *mpc.Relaxation
}

// Gap is the certified gap UBD − LBD of the step's solve (+Inf without one).
func (r *StepRecord) Gap() float64 { return r.UBD - r.LBD }

// Run is the outcome of a closed-loop run.
type Run struct {
	Steps    []StepRecord
	Summary  Summary
	Mismatch []float64
}

// RunClosedLoop runs o.Steps control periods of the pump station under an mpc.Controller built
// from o.MPC, and writes the outputs to o.OutDir when it is set. An error means the loop could not
// run (bad configuration, I/O); solver trouble shows up as fallbacks in the records. When ctx ends
// the step in progress ends at its next look at the time (an NLP in progress runs out
// first), the loop stops before its next step and returns the steps so far with ctx's error,
// writing no outputs.
func RunClosedLoop(ctx context.Context, o LoopOptions) (*Run, error) {
	if o.Steps < 1 {
		return nil, fmt.Errorf("sim: need at least one step, got %d", o.Steps)
	}
	if o.StepBudget < 0 {
		return nil, errors.New("sim: negative step budget")
	}
	if o.StepBudget == 0 {
		o.StepBudget = DefaultStepBudget
	}
	plant, err := New(o.Sim)
	if err != nil {
		return nil, err
	}
	fam, err := pumpstation.NewFamily(o.Sim.Plant)
	if err != nil {
		return nil, err
	}
	if o.MPC.Settings.Interrupt == nil {
		// A step in progress ends at its next look at the time once ctx ends.
		o.MPC.Settings.Interrupt = func() bool { return ctx.Err() != nil }
	}
	var ctrlFam mpc.Family = fam
	if o.Controller != nil {
		ctrlFam = o.Controller
	}
	ctrl, err := mpc.NewController(ctrlFam, o.MPC)
	if err != nil {
		return nil, err
	}
	clock := o.MPC.Clock
	if clock == nil {
		clock = gbd.RealClock
	}
	pc := fam.Config()
	run := &Run{Mismatch: plant.Mismatch()}
	for range o.Steps {
		if err := ctx.Err(); err != nil {
			return run, err
		}
		payload := plant.Measurement()
		deadline := clock.Now().Add(o.StepBudget)
		if o.Controller != nil {
			if payload, err = stationToModel(payload); err != nil {
				return run, fmt.Errorf("sim: step %d: %w", plant.StepIndex(), err)
			}
		}
		m, err := ctrlFam.DecodeMeasurement(payload)
		if err != nil {
			return run, fmt.Errorf("sim: step %d: the simulator's own measurement was rejected: %w", plant.StepIndex(), err)
		}
		if o.Log != nil {
			o.Log.BeginStep(uint64(plant.StepIndex()+1), m.Instance())
		}
		d, err := ctrl.Step(m, deadline)
		if err != nil {
			return run, fmt.Errorf("sim: step %d: %w", plant.StepIndex(), err)
		}
		if o.Log != nil {
			o.Log.FinishStep(&d)
		}
		apply := d.Apply
		if o.Controller != nil {
			if apply, err = modelToStation(apply, pc.NP()); err != nil {
				return run, fmt.Errorf("sim: step %d: %w", plant.StepIndex(), err)
			}
		}
		act, err := pumpstation.DecodeApply(apply, &pc)
		if err != nil {
			return run, fmt.Errorf("sim: step %d: %w", plant.StepIndex(), err)
		}
		tr, err := plant.Step(act.PumpsOn, act.Flow)
		if err != nil {
			return run, err
		}
		rec := StepRecord{Transition: tr, Status: d.Status, Reason: d.Reason, Objective: d.Objective,
			LBD: d.LBD, UBD: d.UBD, Iterations: d.Iterations, SolveSeconds: d.SolveSeconds, Agent: d.Agent, Safe: d.Safe,
			Carried: d.Carry.Carried, Relaxed: d.Relaxed}
		if d.Result != nil {
			rec.MasterSeconds, rec.NLPSeconds = d.Result.MasterTime.Seconds(), d.Result.SubproblemTime.Seconds()
		}
		run.Steps = append(run.Steps, rec)
		if o.OnStep != nil {
			o.OnStep(rec)
		}
	}
	run.Summary = Summarize(run.Steps, plant, &pc)
	if o.OutDir != "" {
		if err := run.Write(o.OutDir, &pc); err != nil {
			return run, err
		}
	}
	return run, nil
}

// Write stores steps.csv, summary.json, summary.txt and figure.png in dir (created if needed).
func (r *Run) Write(dir string, c *pumpstation.Config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	files := []struct {
		name  string
		write func(*os.File) error
	}{
		{"steps.csv", func(f *os.File) error { return writeCSV(f, r.Steps) }},
		{"summary.json", func(f *os.File) error { return r.Summary.WriteJSON(f) }},
		{"summary.txt", func(f *os.File) error { return r.Summary.WriteText(f) }},
		{"figure.png", func(f *os.File) error { return writeFigure(f, r.Steps, c) }},
	}
	for _, fl := range files {
		path := filepath.Join(dir, fl.name)
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		werr := fl.write(f)
		cerr := f.Close()
		if werr != nil {
			return fmt.Errorf("sim: writing %s: %w", path, werr)
		}
		if cerr != nil {
			return fmt.Errorf("sim: %w", cerr)
		}
	}
	return nil
}
