package replay

import (
	"encoding/json"
	"fmt"
	"gbdmpc/policy"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Report files written by Report.WriteDir.
const (
	ReportMarkdown = "replay-report.md"
	ReportJSON     = "replay-report.json"
)

// SplitReport describes the hold-out split.
type SplitReport struct {
	TrainSolves    int    `json:"train_solves"`
	HeldOutSolves  int    `json:"held_out_solves"`
	TrainMasters   int    `json:"train_masters"`
	HeldOutMasters int    `json:"held_out_masters"`
	Cutoff         string `json:"cutoff,omitempty"` // RFC 3339: start of the first held-out solve
}

// TrainingReport describes how the new policy was obtained.
type TrainingReport struct {
	Mode         string  `json:"mode"` // ModeFineTune, ModeContinue or ModeFromScratch
	OldVersion   string  `json:"old_version,omitempty"`
	NewVersion   string  `json:"new_version"`
	Variant      string  `json:"variant"`
	Samples      int     `json:"samples"`
	Sets         int     `json:"sets"` // training solves
	Seed         uint64  `json:"seed"`
	Stage1Epochs int     `json:"stage1_epochs"`
	Stage2Epochs int     `json:"stage2_epochs"`
	Seconds      float64 `json:"seconds"`
}

// ConstantReport is the reference a learned policy must beat to have learned anything beyond the
// label frequencies: always proposing the most frequent training answer.
type ConstantReport struct {
	Label          int `json:"label"` // index in Y_pb
	HeldOutExact   int `json:"held_out_exact"`
	HeldOutMasters int `json:"held_out_masters"`
}

// constantReference scores the most frequent training label on the held-out masters (nil when
// there is nothing to score, and in an implicit Y_pb).
func constantReference(train, held *policy.Dataset) *ConstantReport {
	if len(train.Samples) == 0 || len(held.Samples) == 0 || train.Ypb != nil && train.Ypb.Implicit() {
		// An implicit Y_pb's labels are assignments, not positions to count.
		return nil
	}
	count := map[int]int{}
	best := train.Samples[0].Label
	for _, s := range train.Samples {
		count[s.Label]++
		if count[s.Label] > count[best] || count[s.Label] == count[best] && s.Label < best {
			best = s.Label
		}
	}
	c := &ConstantReport{Label: best, HeldOutMasters: len(held.Samples)}
	for _, s := range held.Samples {
		if s.Label == best {
			c.HeldOutExact++
		}
	}
	return c
}

// Report is everything one offline retraining run found and decided.
type Report struct {
	V         int            `json:"v"`
	Generated time.Time      `json:"generated"`
	Logs      []string       `json:"logs"`
	Family    string         `json:"family"`
	From      string         `json:"from,omitempty"`
	To        string         `json:"to,omitempty"`
	Plants    []string       `json:"plants,omitempty"`
	Holdout   float64        `json:"holdout"`
	Replay    Stats          `json:"replay"`
	Split     SplitReport    `json:"split"`
	Training  TrainingReport `json:"training"`
	Shadow    *ShadowReport  `json:"shadow"`
	// Constant is the most-frequent-answer reference on the held-out masters (informative: the
	// gate compares new with old only).
	Constant       *ConstantReport `json:"constant_predictor,omitempty"`
	Gate           Verdict         `json:"gate"`
	Forced         bool            `json:"forced"`
	Written        string          `json:"written,omitempty"` // path of the written policy
	DatasetWritten string          `json:"dataset_written,omitempty"`
}

// WriteDir writes the report as Markdown and JSON into dir (created if missing).
func (r *Report) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("replay: report: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("replay: report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("replay: report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportMarkdown), []byte(r.Markdown()), 0o644); err != nil {
		return fmt.Errorf("replay: report: %w", err)
	}
	return nil
}

// Markdown renders the report for a person deciding whether to deploy the new policy.
func (r *Report) Markdown() string {
	var b strings.Builder
	st := &r.Replay
	fmt.Fprintf(&b, "# Decision-log replay — %s\n\nGenerated %s from %s.", r.Family, r.Generated.Format(time.RFC3339), strings.Join(r.Logs, ", "))
	if r.From != "" || r.To != "" {
		fmt.Fprintf(&b, " Window [%s, %s).", orOpen(r.From), orOpen(r.To))
	}
	if len(r.Plants) > 0 {
		fmt.Fprintf(&b, " Plants %s.", strings.Join(r.Plants, ", "))
	}
	b.WriteString("\n\n## Replay\n\n| | |\n|---|---|\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	row("records read / selected", fmt.Sprintf("%d / %d", st.Records, st.Selected))
	row("torn tails / corrupt lines skipped", fmt.Sprintf("%d / %d", st.Torn, st.Skipped))
	row("master / solve records", fmt.Sprintf("%d / %d", st.MasterRecords, st.SolveRecords))
	if st.SoftRecords > 0 {
		row("soft-constrained solve records (left out)", fmt.Sprint(st.SoftRecords))
	}
	row("rejected: other family / other Y_pb / malformed", fmt.Sprintf("%d / %d / %d", st.OtherFamily, st.YpbMismatch, st.Malformed))
	if st.FirstMismatch != "" {
		row("first Y_pb mismatch", st.FirstMismatch)
	}
	row("infeasible masters (no label)", st.InfeasibleMasters)
	row("labelled masters / solves", fmt.Sprintf("%d / %d", st.Masters, st.Solves))
	row("logged optimal masters whose label agrees", fmt.Sprintf("%d / %d", st.LabelAgrees, st.LoggedOptimal))
	if len(st.PolicyVersions) > 0 {
		var vs []string
		for v, n := range st.PolicyVersions {
			if v == "" {
				v = "classical"
			}
			vs = append(vs, fmt.Sprintf("%s: %d", v, n))
		}
		sort.Strings(vs)
		row("master records by running policy", strings.Join(vs, ", "))
	}
	row("throughput", fmt.Sprintf("%.0f masters/s (read %.3fs, label %.3fs)", st.MastersPerSecond, st.ReadSeconds, st.LabelSeconds))

	sp := &r.Split
	fmt.Fprintf(&b, "\n## Split and training\n\nThe latest %.0f%% of solves by time are held out: %d solves (%d masters) from %s; %d solves (%d masters) before them train the new policy.\n\n",
		100*r.Holdout, sp.HeldOutSolves, sp.HeldOutMasters, orOpen(sp.Cutoff), sp.TrainSolves, sp.TrainMasters)
	tr := &r.Training
	fmt.Fprintf(&b, "Mode %s, %s policy %s", tr.Mode, tr.Variant, tr.NewVersion)
	if tr.OldVersion != "" {
		fmt.Fprintf(&b, " (old %s)", tr.OldVersion)
	}
	stage1 := fmt.Sprint(tr.Stage1Epochs)
	if tr.Mode == ModeFineTune {
		stage1 = "0 (the base's graph layers kept)"
	}
	fmt.Fprintf(&b, ", seed %d, stage-1 epochs %s, stage-2 epochs %d, %.1fs.\n", tr.Seed, stage1, tr.Stage2Epochs, tr.Seconds)

	if sh := r.Shadow; sh != nil {
		fmt.Fprintf(&b, "\n## Shadow evaluation on the held-out slice\n\n%d held-out masters; %d of %d held-out solves re-run with the %s master (%d could not be rebuilt).\n\n",
			sh.Masters, sh.Rerun, sh.Solves, sh.Master, sh.Unreplayable)
		b.WriteString("| | classical GBD |")
		pols := []*PolicyReport{}
		names := []string{}
		if sh.Old != nil {
			pols, names = append(pols, sh.Old), append(names, "old "+sh.Old.Version)
		}
		pols, names = append(pols, sh.New), append(names, "new "+sh.New.Version)
		for _, n := range names {
			fmt.Fprintf(&b, " %s |", n)
		}
		b.WriteString("\n|---|---|")
		for range names {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		line := func(name, classical string, f func(p *PolicyReport) string) {
			fmt.Fprintf(&b, "| %s | %s |", name, classical)
			for _, p := range pols {
				fmt.Fprintf(&b, " %s |", f(p))
			}
			b.WriteString("\n")
		}
		c := &sh.Classical
		line("exact match", "—", func(p *PolicyReport) string {
			return policy.Ratio(p.Metrics.ExactMatch, p.Metrics.Samples, 1)
		})
		line("feasible (masters with feasibility cuts)", "—", func(p *PolicyReport) string {
			return policy.Ratio(p.Metrics.Feasible, p.Metrics.WithFeasCuts, 1)
		})
		line("acceptance (accepted/proposed)", "—", func(p *PolicyReport) string {
			return policy.Ratio(p.Rerun.Accepted, p.Rerun.Proposed, 1)
		})
		line("iterations (mean)", fmt.Sprintf("%.2f", c.Iterations), func(p *PolicyReport) string { return fmt.Sprintf("%.2f", p.Rerun.Iterations) })
		line("master time (mean ms)", fmt.Sprintf("%.3f", 1e3*c.MasterSecondsMean), func(p *PolicyReport) string {
			return fmt.Sprintf("%.3f", 1e3*p.Rerun.MasterSecondsMean)
		})
		line("optimum matches classical", fmt.Sprintf("%d/%d", c.MatchClassical, c.Solves), func(p *PolicyReport) string {
			return fmt.Sprintf("%d/%d", p.Rerun.MatchClassical, p.Rerun.Solves)
		})
		line("failed runs", fmt.Sprint(c.Failed), func(p *PolicyReport) string { return fmt.Sprint(p.Rerun.Failed) })
		if c.LoggedOptimal > 0 {
			fmt.Fprintf(&b, "\nClassical re-runs reproduce %d of %d logged optimal objectives.\n", c.ReproducesLog, c.LoggedOptimal)
		}
		if k := r.Constant; k != nil {
			fmt.Fprintf(&b, "\nReference: always proposing the most frequent training answer (Y_pb index %d) matches %s held-out masters; a policy at or below that has learned only the label frequencies.\n",
				k.Label, policy.Ratio(k.HeldOutExact, k.HeldOutMasters, 1))
		}
		if sh.Master == "enum" {
			b.WriteString("\nWith the enum master every master is solved exactly, so a proposal is taken only where it ties the master's optimum within ε_tol (another optimal assignment): the policy changes iterations and master time only through such ties, never by saving a master solve; re-run with --master cbc or staged to see time-limited masters.\n")
		}
	}

	fmt.Fprintf(&b, "\n## Gate\n\nRule: %s.\n\n", r.Gate.Rule)
	if len(r.Gate.Checks) > 0 {
		b.WriteString("| check | old | new | pass |\n|---|---|---|---|\n")
		for _, c := range r.Gate.Checks {
			fmt.Fprintf(&b, "| %s | %.4g | %.4g | %v |\n", c.Name, c.Old, c.New, c.Pass)
		}
		b.WriteString("\n")
	}
	verdict := "refused"
	if r.Gate.Pass {
		verdict = "passed"
	}
	fmt.Fprintf(&b, "Verdict: **%s** — %s.", verdict, r.Gate.Reason)
	switch {
	case r.Written != "" && !r.Gate.Pass:
		fmt.Fprintf(&b, " Written anyway to %s (forced).", r.Written)
	case r.Written != "":
		fmt.Fprintf(&b, " Written to %s.", r.Written)
	default:
		b.WriteString(" No policy file written.")
	}
	b.WriteString("\n")
	return b.String()
}

func orOpen(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// summary is the one-line form of a shadow report for progress logs.
func (sh *ShadowReport) summary() string {
	s := fmt.Sprintf("%d held-out masters, %d solves re-run", sh.Masters, sh.Rerun)
	add := func(name string, p *PolicyReport) {
		s += fmt.Sprintf("; %s %s: exact match %s, feasible %s, acceptance %s, master %.3f ms/solve, %d/%d match classical",
			name, p.Version, policy.Ratio(p.Metrics.ExactMatch, p.Metrics.Samples, 1), policy.Ratio(p.Metrics.Feasible, p.Metrics.WithFeasCuts, 1),
			policy.Ratio(p.Rerun.Accepted, p.Rerun.Proposed, 1), 1e3*p.Rerun.MasterSecondsMean, p.Rerun.MatchClassical, p.Rerun.Solves)
	}
	if sh.Old != nil {
		add("old", sh.Old)
	}
	add("new", sh.New)
	return s
}
