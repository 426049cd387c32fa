package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"gbdmpc/mpc"
	"gbdmpc/policy"
	"gbdmpc/telemetry"
)

// ErrRefused is returned, with the report, when the gate refused the new policy and it was not
// written. The report says why.
var ErrRefused = errors.New("replay: the new policy is not at least as good as the old one on the held-out slice; not written (force to override)")

// Config is one offline retraining run: replay the logs, hold out the latest solves, retrain,
// shadow-evaluate old against new, and write the new policy only through the gate.
type Config struct {
	Logs []string // decision-log directories or segment files
	// Family names the plant family; empty means the old policy's, else the first selected record's.
	Family string
	// Families resolves a family name (required): the command's table of configured families.
	Families func(name string) (mpc.Family, error)
	From, To time.Time
	Plants   []string
	Strict   bool // a corrupt line is an error instead of skipped and counted
	Workers  int

	OldPolicy string // policy file to compare with and to fine-tune ("" : none, train from scratch)
	Out       string // where to write the new policy ("" : write none, only report)
	// Holdout is the fraction of the latest solves held out (0 means DefaultHoldout).
	Holdout float64
	Retrain RetrainConfig
	// Shadow configures the re-runs; its Family is filled in.
	Shadow ShadowConfig
	Gate   Gate
	Force  bool // write the new policy even when the gate refuses it

	ReportDir  string // write replay-report.md and replay-report.json here ("" : none)
	DatasetOut string // write the whole replayed dataset here ("" : none)
	// Log receives one line per phase (nil: nothing).
	Log io.Writer
	Now func() time.Time // nil: time.Now
}

// Run carries out cfg. It returns the report together with ErrRefused when the gate refused the
// policy, and a nil report only when the run could not be carried out.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	if len(cfg.Logs) == 0 || cfg.Families == nil {
		return nil, errors.New("replay: need decision logs and a family resolver")
	}
	holdout := cfg.Holdout
	if holdout == 0 {
		holdout = DefaultHoldout
	}
	rep := &Report{V: 1, Generated: now().UTC(), Logs: cfg.Logs, Plants: cfg.Plants, Holdout: holdout, Forced: cfg.Force}
	if !cfg.From.IsZero() {
		rep.From = cfg.From.UTC().Format(time.RFC3339Nano)
	}
	if !cfg.To.IsZero() {
		rep.To = cfg.To.UTC().Format(time.RFC3339Nano)
	}

	var old *policy.Agent
	if cfg.OldPolicy != "" {
		a, err := policy.Load(cfg.OldPolicy)
		if err != nil {
			return nil, err
		}
		old = a
	}
	name := cfg.Family
	if name == "" && old != nil {
		name = old.Family()
	}
	filter := telemetry.Filter{From: cfg.From, To: cfg.To, Plants: cfg.Plants}
	if name == "" {
		var err error
		if name, err = DetectFamily(filter, cfg.Logs...); err != nil {
			return nil, err
		}
	}
	fam, err := cfg.Families(name)
	if err != nil {
		return nil, err
	}
	rep.Family = fam.Name()
	if old != nil {
		if err := old.CheckFits(fam.Name(), fam.Admissible()); err != nil {
			return nil, fmt.Errorf("replay: old policy %s: %w", cfg.OldPolicy, err)
		}
	}

	d, err := Read(ctx, Options{Family: fam, From: cfg.From, To: cfg.To, Plants: cfg.Plants,
		Strict: cfg.Strict, Workers: cfg.Workers, Now: now}, cfg.Logs...)
	if err != nil {
		return nil, err
	}
	rep.Replay = d.Stats
	logf("replay: %d records (%d torn, %d corrupt skipped), %d selected; %d master problems of %d solves labelled at %.0f masters/s; rejected %d of another family, %d of another Y_pb, %d malformed",
		d.Stats.Records, d.Stats.Torn, d.Stats.Skipped, d.Stats.Selected, d.Stats.Masters, d.Stats.Solves,
		d.Stats.MastersPerSecond, d.Stats.OtherFamily, d.Stats.YpbMismatch, d.Stats.Malformed)
	if d.Stats.FirstMismatch != "" {
		logf("replay: first Y_pb mismatch: %s", d.Stats.FirstMismatch)
	}
	if d.Stats.SoftRecords > 0 {
		logf("replay: %d records of soft-constrained solves (steps whose hard limits could not be held) left out", d.Stats.SoftRecords)
	}
	if st := d.Stats; st.Masters == 0 {
		msg := fmt.Sprintf("replay: no %s master problem to learn from: %d records read, %d selected, %d of another family, %d of another Y_pb, %d malformed, %d infeasible",
			fam.Name(), st.Records, st.Selected, st.OtherFamily, st.YpbMismatch, st.Malformed, st.InfeasibleMasters)
		if st.FirstMismatch != "" {
			msg += "; " + st.FirstMismatch
		}
		return nil, errors.New(msg)
	}
	if cfg.DatasetOut != "" {
		if err := policy.SaveDataset(cfg.DatasetOut, d.Dataset); err != nil {
			return nil, err
		}
		rep.DatasetWritten = cfg.DatasetOut
	}

	sp, err := HoldOut(d, holdout)
	if err != nil {
		return nil, err
	}
	rep.Split = SplitReport{TrainSolves: len(sp.TrainSolves), HeldOutSolves: len(sp.HeldOutSolves),
		TrainMasters: len(sp.Train.Samples), HeldOutMasters: len(sp.HeldOut.Samples)}
	if !sp.Cutoff.IsZero() {
		rep.Split.Cutoff = sp.Cutoff.Format(time.RFC3339Nano)
	}
	logf("split: %d solves (%d masters) to train on, the latest %d solves (%d masters) from %s held out",
		rep.Split.TrainSolves, rep.Split.TrainMasters, rep.Split.HeldOutSolves, rep.Split.HeldOutMasters, orOpen(rep.Split.Cutoff))

	t0 := now()
	cand, mode, err := Retrain(ctx, old, sp.Train, cfg.Retrain)
	if err != nil {
		return nil, err
	}
	rep.Training = TrainingReport{Mode: mode, NewVersion: cand.Version(), Variant: string(cand.Variant()),
		Samples: len(sp.Train.Samples), Sets: len(sp.TrainSolves), Seed: cfg.Retrain.Train.Seed,
		Stage1Epochs: cand.Meta().Stage1.Epochs, Stage2Epochs: cand.Meta().Stage2.Epochs, Seconds: now().Sub(t0).Seconds()}
	if mode == ModeFineTune {
		rep.Training.Stage1Epochs = 0 // stage 1 did not run: the base's graph layers are kept
	}
	rep.Constant = constantReference(sp.Train, sp.HeldOut)
	if old != nil {
		rep.Training.OldVersion = old.Version()
	}
	logf("retrain (%s): policy %s in %.1fs", mode, cand.Version(), rep.Training.Seconds)

	sc := cfg.Shadow
	sc.Family = fam
	sh, err := Shadow(ctx, sp.HeldOut, sp.HeldOutSolves, old, cand, sc)
	if err != nil {
		return nil, err
	}
	rep.Shadow = sh
	rep.Gate = cfg.Gate.Judge(sh)
	logf("shadow: %s", rep.Shadow.summary())
	logf("gate: pass=%v: %s", rep.Gate.Pass, rep.Gate.Reason)

	var refused bool
	if cfg.Out != "" {
		if rep.Gate.Pass || cfg.Force {
			cand.SetHeldOut(sh.New.Metrics)
			if err := cand.Save(cfg.Out); err != nil {
				return nil, err
			}
			rep.Written = cfg.Out
			logf("wrote policy %s to %s", cand.Version(), cfg.Out)
		} else {
			refused = true
		}
	}
	if cfg.ReportDir != "" {
		if err := rep.WriteDir(cfg.ReportDir); err != nil {
			return nil, err
		}
	}
	if refused {
		return rep, ErrRefused
	}
	return rep, nil
}

// DetectFamily is the family of the first record f selects in the logs.
func DetectFamily(f telemetry.Filter, paths ...string) (string, error) {
	r, err := telemetry.NewReader(paths...)
	if err != nil {
		return "", fmt.Errorf("replay: %w", err)
	}
	defer r.Close()
	r.SkipCorrupt = true
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return "", errors.New("replay: no selected record names a plant family; give the family explicitly")
		}
		if err != nil {
			return "", fmt.Errorf("replay: %w", err)
		}
		if f.Match(rec) && rec.Family != "" {
			return rec.Family, nil
		}
	}
}
