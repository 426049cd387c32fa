package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"gbdmpc/controller"
	"gbdmpc/mpc"
	"gbdmpc/plant/model"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/sim"
	"gbdmpc/solver"
	"gbdmpc/telemetry"
)

func cmdSimulate(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("simulate", stderr)
	var o solveOptions
	o.register(fs)
	steps := fs.Int("steps", 96, "control periods to run (96 = one day of 15-min periods)")
	out := fs.String("out", "out/simulate", "directory for steps.csv, figure.png and summary.{json,txt}")
	simSeed := fs.Uint64("sim-seed", 1, "simulator seed (plant–model mismatch and demand noise)")
	var budget time.Duration
	solver.DurationVar(fs, &budget, "step-deadline", 0, "per-step solve deadline, 0 for none; with --config the plant's deadline unless given")
	mqttURL := fs.String("mqtt", "", "run as an MQTT plant against this broker URL instead of in process")
	speedup := fs.Float64("speedup", 900, "with --mqtt: plant time runs this many times faster than real time (900: 1 s periods)")
	plantID := fs.String("plant-id", "pump1", "with --mqtt: the daemon's plant id")
	carry := fs.Bool("carry-cuts", true, "start each step's GBD with the cuts of earlier steps re-evaluated for it (false: from scratch)")
	logDir := fs.String("decision-log", "", "in process: write the daemon's decision log of every step into this directory (for replay)")
	station := fs.Int("station", 0, "with --config serving a model of the pump station (configs/models/pumpstation*.yaml): run the built-in station's simulator of this many binaries (12, 24, 40, 60) with the model as the controller, the day --plant pumpstation sees")
	if err := parse(fs, args); err != nil {
		return err
	}
	if o.plant != "pumpstation" && o.config.file == "" {
		return fmt.Errorf("simulate supports --plant pumpstation, or a model plant with --config")
	}
	if err := o.validate(); err != nil {
		return err
	}
	if err := configDeadline(fs, &o.config, &budget); err != nil {
		return err
	}
	fam, newMaster, pol, err := o.resolve()
	if err != nil {
		return err
	}
	newNLP, err := o.newNLP()
	if err != nil {
		return err
	}
	var cfg sim.Config
	var ctrlFam mpc.Family
	mf, isModel := fam.(*model.Family)
	switch {
	case *station != 0 && (!isModel || *mqttURL != ""):
		return fmt.Errorf("--station needs --config serving a model of the pump station, in process")
	case *station != 0:
		pc, err := pumpstation.SizedConfig(*station)
		if err != nil {
			return err
		}
		cfg, ctrlFam = sim.ConfigFor(pc), mf
	case isModel:
		if *mqttURL != "" {
			p, err := o.config.plant()
			if err != nil {
				return err
			}
			return simulateModelMQTT(ctx, mf, model.SimConfig{Seed: *simSeed}, *mqttURL, *plantID, p.Period, *steps, *out, stdout, stderr)
		}
		lo := model.LoopOptions{Sim: model.SimConfig{Seed: *simSeed}, Steps: *steps,
			MPC:    mpc.Options{NLP: newNLP(), NewMaster: newMaster, Policy: pol, Settings: o.settings(), NoCarry: !*carry},
			Budget: budget}
		return simulateModel(ctx, mf, lo, *logDir, *plantID, *simSeed, o.policyVersion, *out, stdout, stderr)
	default:
		ps, ok := fam.(*pumpstation.Family)
		if !ok {
			return fmt.Errorf("simulate runs the pump station or a model plant; the configured plant is %s", fam.Name())
		}
		cfg = sim.ConfigFor(ps.Config())
	}
	cfg.Seed = *simSeed
	if *mqttURL != "" {
		return simulateMQTT(ctx, cfg, *mqttURL, *steps, *out, *speedup, *plantID, stdout, stderr)
	}
	start, done := time.Now(), 0
	lo := sim.LoopOptions{
		Sim: cfg, Steps: *steps,
		MPC:        mpc.Options{NLP: newNLP(), NewMaster: newMaster, Policy: pol, Settings: o.settings(), NoCarry: !*carry},
		StepBudget: budget,
		OutDir:     *out,
		Controller: ctrlFam,
		OnStep: func(sim.StepRecord) {
			done++
			progressBar(stderr, "simulate", done, *steps, "steps", start)
		},
	}
	var dlog *telemetry.DecisionLog
	if *logDir != "" {
		// A queue as long as the run's records: the simulator must not outrun its log and drop any.
		if dlog, err = telemetry.Open(*logDir, telemetry.LogOptions{QueueSize: 1 << 16, Fsync: telemetry.FsyncNever}, nil, nil); err != nil {
			return err
		}
		sr := controller.NewStepRecorder(dlog, nil, *plantID, fam.Name(), fmt.Sprintf("sim%d-%d", *simSeed, start.UnixNano()), o.policyVersion)
		lo.MPC.Recorder, lo.Log = sr.Recorder(), sr
	}
	run, err := sim.RunClosedLoop(ctx, lo)
	if dlog != nil {
		if cerr := dlog.Close(context.Background()); err == nil && cerr != nil {
			err = fmt.Errorf("decision log: %w", cerr)
		}
		if err == nil && dlog.Dropped() > 0 {
			err = fmt.Errorf("decision log: %d records dropped", dlog.Dropped())
		}
	}
	if err != nil && ctx.Err() != nil && run != nil {
		return fmt.Errorf("interrupted after %d of %d steps, no outputs written: %w", len(run.Steps), *steps, err)
	}
	if err != nil {
		return err
	}
	if err := run.Summary.WriteText(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s/{steps.csv,figure.png,summary.json,summary.txt}\n", *out)
	return nil
}

// configDeadline makes the configured plant's deadline the step deadline when --step-deadline is
// not given: the day a config is simulated under is the one its daemon would serve.
func configDeadline(fs *flag.FlagSet, pc *plantConfig, budget *time.Duration) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "step-deadline" })
	if given {
		return nil
	}
	p, err := pc.plant()
	if err != nil || p == nil {
		return err
	}
	*budget = p.Deadline
	return nil
}

// simulateModel closes the loop of a model plant against its simulated plant (plant/model.Sim),
// writes steps.csv and summary.json to out and, with logDir, the daemon's decision log of every
// step (for replay).
func simulateModel(ctx context.Context, fam *model.Family, lo model.LoopOptions, logDir, plantID string, seed uint64, policyVersion, out string, stdout, stderr io.Writer) error {
	start, done := time.Now(), 0
	lo.OnStep = func(model.LoopRecord) {
		done++
		progressBar(stderr, "simulate", done, lo.Steps, "steps", start)
	}
	var dlog *telemetry.DecisionLog
	if logDir != "" {
		var err error
		// A queue as long as the run's records: the simulator must not outrun its log and drop any.
		if dlog, err = telemetry.Open(logDir, telemetry.LogOptions{QueueSize: 1 << 16, Fsync: telemetry.FsyncNever}, nil, nil); err != nil {
			return err
		}
		sr := controller.NewStepRecorder(dlog, nil, plantID, fam.Name(), fmt.Sprintf("sim%d-%d", seed, start.UnixNano()), policyVersion)
		lo.MPC.Recorder, lo.Log = sr.Recorder(), sr
	}
	recs, _, err := model.RunLoop(ctx, fam, lo)
	if dlog != nil {
		if cerr := dlog.Close(context.Background()); err == nil && cerr != nil {
			err = fmt.Errorf("decision log: %w", cerr)
		}
		if err == nil && dlog.Dropped() > 0 {
			err = fmt.Errorf("decision log: %d records dropped", dlog.Dropped())
		}
	}
	if err != nil {
		return err
	}
	return writeModelRun(fam, recs, lo.Budget, out, stdout)
}

// writeModelRun writes a model plant's closed loop: steps.csv, summary.json and figure.png (the
// deadline drawn when there was one), the summary also to stdout.
func writeModelRun(fam *model.Family, recs []model.LoopRecord, deadline time.Duration, out string, stdout io.Writer) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var csv bytes.Buffer
	if err := fam.WriteCSV(&csv, recs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "steps.csv"), csv.Bytes(), 0o644); err != nil {
		return err
	}
	sum, err := json.MarshalIndent(fam.Summarize(recs), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "summary.json"), append(sum, '\n'), 0o644); err != nil {
		return err
	}
	var fig bytes.Buffer
	if len(recs) > 0 {
		if err := fam.WriteFigure(&fig, recs, deadline); err != nil {
			return fmt.Errorf("figure: %w", err)
		}
		if err := os.WriteFile(filepath.Join(out, "figure.png"), fig.Bytes(), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s\nwrote %s/{steps.csv,summary.json,figure.png}\n", sum, out)
	return nil
}
