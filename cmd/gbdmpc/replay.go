package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/policy"
	"gbdmpc/replay"
	"gbdmpc/solver"
)

func cmdReplay(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("replay", stderr)
	var logs, plants multiFlag
	fs.Var(&logs, "log", "decision-log directory or segment file (repeatable)")
	fs.Var(&plants, "plant", "plant id to select (repeatable; default all)")
	fam := fs.String("family", "", "plant family: synthesis | pumpstation (default: the old policy's, else the log's)")
	from := fs.String("from", "", "select records at or after this RFC 3339 time")
	to := fs.String("to", "", "select records before this RFC 3339 time")
	old := fs.String("policy", "", "running policy file: compared with, and fine-tuned unless --from-scratch")
	out := fs.String("out", "", "write the new policy here when the gate passes (default: report only)")
	scratch := fs.Bool("from-scratch", false, "train both stages from fresh weights instead of fine-tuning --policy")
	cont := fs.Bool("continue", false, "train both stages again from --policy's weights instead of fine-tuning its head only")
	holdout := fs.Float64("holdout", replay.DefaultHoldout, "fraction of the latest solves held out for shadow evaluation, in (0,1)")
	e1 := fs.Int("stage1-epochs", 20, "stage-1 epochs (from scratch or --continue)")
	e2 := fs.Int("stage2-epochs", 20, "stage-2 epochs")
	seed := fs.Uint64("seed", 1, "training seed")
	preset := fs.String("preset", policy.DefaultPreset, "the network trained from scratch (gbdmpc train --preset): paper | paper-features | best | light")
	variant := fs.String("variant", "", "the network trained from scratch: proposed | baseline | independent | structured (empty: --policy's, else proposed, structured when Y_pb is too large to enumerate)")
	report := fs.String("report", "", "write replay-report.md and replay-report.json into this directory")
	force := fs.Bool("force", false, "write the new policy even when the gate refuses it")
	datasetOut := fs.String("dataset-out", "", "write the replayed, exactly labelled dataset here (.jsonl.gz)")
	// The shadow re-runs' solver settings; their ε is also the tolerance of "matches classical GBD".
	spec := solver.DefaultSpec()
	spec.RegisterFlags(fs, "master", "nlp", "tmin", "tmax", "eps", "eps_tol")
	accTol := fs.Float64("acceptance-tol", replay.DefaultAcceptanceTol, "how far the new acceptance rate may fall below the old one")
	maxSolves := fs.Int("max-solves", 0, "re-run only the latest N held-out solves (0: all)")
	strict := fs.Bool("strict", false, "fail on a corrupt log line instead of skipping and counting it")
	var pc plantConfig
	pc.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(logs) == 0 {
		return fmt.Errorf("--log is required")
	}
	if *scratch && *cont {
		return fmt.Errorf("--from-scratch and --continue exclude each other")
	}
	if *cont && *old == "" {
		return fmt.Errorf("--continue needs the running policy (--policy) to continue from")
	}
	if !(*holdout > 0 && *holdout < 1) {
		return fmt.Errorf("--holdout must be in (0,1), got %v", *holdout)
	}
	if v := *accTol; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("--acceptance-tol must be a non-negative number, got %v", v)
	}
	if err := spec.CheckFlags(); err != nil {
		return err
	}
	if *e1 < 1 || *e2 < 1 || *maxSolves < 0 {
		return fmt.Errorf("--stage1-epochs and --stage2-epochs must be ≥ 1, --max-solves ≥ 0")
	}
	var newMaster func() gbd.Master // nil: the shadow's default for the family's Y_pb
	var err error
	if spec.Master != backend.AutoMasterName { // auto: the shadow picks by Y_pb
		if newMaster, err = backend.MasterByName(spec.Master); err != nil {
			return err
		}
	}
	window := [2]time.Time{}
	for i, s := range []string{*from, *to} {
		if s == "" {
			continue
		}
		if window[i], err = time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Errorf("--from/--to: %w", err)
		}
	}
	gate := replay.Gate{AcceptanceTol: *accTol}
	if *accTol == 0 {
		gate.AcceptanceTol = -1 // an explicit 0 on the command line means no tolerance
	}

	newNLP, err := backend.NLPByName(spec.NLP)
	if err != nil {
		return fmt.Errorf("--nlp: %w", err)
	}
	train := policy.TrainConfig{Variant: policy.Variant(*variant), Seed: *seed, Stage1: policy.StageConfig{Epochs: *e1}, Stage2: policy.StageConfig{Epochs: *e2}}
	pre, err := policy.PresetByName(*preset)
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	pre.Apply(&train) // used from scratch; fine-tuning keeps --policy's network
	rep, err := replay.Run(ctx, replay.Config{
		Logs: logs, Family: *fam, Families: func(name string) (mpc.Family, error) {
			// The configured plant's family (its size) when its name matches the log's.
			p, err := pc.plant()
			if err != nil {
				return nil, err
			}
			if p != nil && p.Family == name {
				return pc.family(name)
			}
			return familyByName(name)
		},
		From: window[0], To: window[1], Plants: plants, Strict: *strict,
		OldPolicy: *old, Out: *out, Holdout: *holdout,
		Retrain: replay.RetrainConfig{FromScratch: *scratch, Continue: *cont, Train: train},
		Shadow:  replay.ShadowConfig{NewMaster: newMaster, NewNLP: newNLP, MaxSolves: *maxSolves, Settings: spec.Settings()},
		Gate:    gate, Force: *force, ReportDir: *report, DatasetOut: *datasetOut, Log: stderr,
	})
	if rep != nil {
		fmt.Fprint(stdout, rep.Markdown())
	}
	return err
}
