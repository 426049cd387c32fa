package controller

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/telemetry"
)

// DecisionSink receives decision-log records; *telemetry.DecisionLog is the one the daemon uses.
// Write must not block (the log drops and counts when its queue is full) and owns the record after
// the call.
type DecisionSink interface {
	Write(r *telemetry.Record) bool
}

// sinkHealth is what a DecisionSink may report about itself (*telemetry.DecisionLog does); the
// plant loops raise it as an alarm in their status.
type sinkHealth interface {
	Healthy() bool
	LastError() error
	Dropped() uint64
	WriteErrors() uint64
}

// dropAlarmFor is how long an alarm for dropped decision records stays raised after the last drop.
const dropAlarmFor = time.Minute

// decisionAlarm follows a sink's health for one plant loop: the alarm text ("" none) from its
// last I/O failure while it is unhealthy or when there were write errors since the last check,
// and from records dropped within dropAlarmFor. The log may recover from a write error within
// the same record (a segment whose directory was removed is replaced by a new one at once), so
// "unhealthy" alone could be over before any check saw it: a write error raises the alarm at the
// next check whatever the health then, and the check after it clears the alarm if writing works.
type decisionAlarm struct {
	health   sinkHealth
	seen     uint64
	lastDrop time.Time
	errsSeen uint64 // WriteErrors at the last check
}

func (a *decisionAlarm) check(now time.Time) string {
	if a == nil || a.health == nil {
		return ""
	}
	var parts []string
	errs := a.health.WriteErrors()
	failed := errs != a.errsSeen
	a.errsSeen = errs
	switch {
	case !a.health.Healthy():
		msg := "decision log cannot write; records are being lost"
		if err := a.health.LastError(); err != nil {
			msg += ": " + err.Error()
		}
		parts = append(parts, msg)
	case failed:
		msg := fmt.Sprintf("decision log write failed and recovered (%d write errors in all)", errs)
		if err := a.health.LastError(); err != nil {
			msg += ": " + err.Error()
		}
		parts = append(parts, msg)
	}
	if d := a.health.Dropped(); d != a.seen {
		a.seen, a.lastDrop = d, now
	}
	if !a.lastDrop.IsZero() && now.Sub(a.lastDrop) < dropAlarmFor {
		parts = append(parts, fmt.Sprintf("decision log dropped records (queue full), %d in all", a.seen))
	}
	return strings.Join(parts, "; ")
}

// decisionRecorder turns the engine's per-master callbacks into decision-log records. It is owned by
// one plant loop: begin, the engine's RecordMaster calls (inside Step, on the loop's goroutine) and
// finish run in sequence, so it needs no lock.
type decisionRecorder struct {
	sink   DecisionSink
	clock  Clock
	plant  string
	family string
	run    string // distinguishes solve ids across daemon restarts

	// the current solve
	solveID  string
	step     uint64
	version  string
	instance json.RawMessage
	kind     mpc.ProblemKind // the problem the engine is solving now
}

var _ mpc.KindRecorder = (*decisionRecorder)(nil)

func (r *decisionRecorder) begin(actionSeq, measurementSeq uint64, policyVersion string, instance json.RawMessage) {
	r.solveID = fmt.Sprintf("%s-%s-%d", r.run, r.plant, actionSeq)
	r.step, r.version, r.instance, r.kind = measurementSeq, policyVersion, instance, mpc.Hard
}

// SolvingKind implements mpc.KindRecorder: the masters that follow belong to a problem of kind.
func (r *decisionRecorder) SolvingKind(kind mpc.ProblemKind) { r.kind = kind }

// record starts a record of the current step's solve of kind. A soft solve has its own solve id
// (the step's with "-soft") and is tagged, so that replay never mixes its masters with the hard
// solve's (telemetry.Record.Problem).
func (r *decisionRecorder) record(typ string, kind mpc.ProblemKind) *telemetry.Record {
	rec := &telemetry.Record{
		V: telemetry.SchemaVersion, Type: typ, TSms: r.clock.Now().UnixMilli(),
		Plant: r.plant, Family: r.family, SolveID: r.solveID, Step: r.step, PolicyVersion: r.version,
	}
	if kind == mpc.Soft {
		rec.SolveID += "-soft"
		rec.Problem = telemetry.ProblemSoft
	}
	return rec
}

// RecordMaster implements gbd.Recorder. The engine reuses view and it after the call, so everything
// is copied.
func (r *decisionRecorder) RecordMaster(view *gbd.MasterView, it *gbd.Iteration) {
	rec := r.record(telemetry.TypeMaster, r.kind)
	rec.Master = telemetry.MasterRecordOf(view, it, r.instance)
	r.sink.Write(rec)
}

// finish writes the solve records of one step (a fallback without a solve included, so the log
// shows every period): one for the step's decision, under the id of the problem whose solve it
// acted on, and one for each other solve the step ran (the hard solve that gave no plan before a
// relaxed decision, or a soft solve that gave none to act on).
func (r *decisionRecorder) finish(d *mpc.Decision) {
	for _, o := range []struct {
		res  *gbd.Result
		kind mpc.ProblemKind
	}{{d.Hard, mpc.Hard}, {d.Soft, mpc.Soft}} {
		if o.res != nil && o.res != d.Result {
			r.write(r.solveRecord(o.res, o.res.Status.String(), o.res.Message, o.res.Agent), o.kind)
		}
	}
	s := r.solveRecord(d.Result, d.Status, d.Reason, d.Agent)
	s.Y, s.Objective, s.LBD, s.UBD = slices.Clone(d.Y), telemetry.Num(d.Objective), telemetry.Num(d.LBD), telemetry.Num(d.UBD)
	s.Iterations, s.TotalSeconds = d.Iterations, d.SolveSeconds
	if d.Result != nil {
		s.Iterations = d.Result.Iterations // another solve of the step has its own record
	}
	if x := d.Relaxed; x != nil {
		s.Relaxed = &telemetry.RelaxedRecord{Limit: x.Limit, Bound: x.Bound, MaxViolation: x.MaxViolation,
			FirstStep: x.FirstStep, WorstStep: x.WorstStep, Unserved: x.Unserved, Proof: x.Proof}
	}
	kind := mpc.Hard
	if d.Result != nil && d.Result == d.Soft {
		kind = mpc.Soft
	}
	r.write(s, kind)
}

// solveRecord is the solve record of result res (nil: none) with the decision's status and message.
func (r *decisionRecorder) solveRecord(res *gbd.Result, status, msg string, agent gbd.AgentStats) *telemetry.SolveRecord {
	s := &telemetry.SolveRecord{Status: status, Instance: r.instance, Message: msg,
		Objective: telemetry.Num(math.Inf(1)), LBD: telemetry.Num(math.Inf(-1)), UBD: telemetry.Num(math.Inf(1))}
	if res != nil {
		s.Y = slices.Clone(res.Y)
		s.Objective, s.LBD, s.UBD = telemetry.Num(res.Objective), telemetry.Num(res.LBD), telemetry.Num(res.UBD)
		s.Iterations = res.Iterations
		s.TotalSeconds = res.Total.Seconds()
		s.MasterSeconds = res.MasterTime.Seconds()
		s.SubproblemSeconds = res.SubproblemTime.Seconds()
		if res.Message != "" && res.Message != msg {
			s.Message = joinMsg(s.Message, res.Message)
		}
		agent = res.Agent
	}
	if r.version != "" {
		s.Agent = &telemetry.AgentStats{Proposed: agent.Proposed, Feasible: agent.Feasible, Accepted: agent.Accepted,
			SolverSelected: agent.SolverSelected, Repeated: agent.Repeated, Final: agent.Final, Benched: agent.Benched}
	}
	return s
}

func (r *decisionRecorder) write(s *telemetry.SolveRecord, kind mpc.ProblemKind) {
	rec := r.record(telemetry.TypeSolve, kind)
	rec.Solve = s
	r.sink.Write(rec)
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// StepRecorder writes the decision log of a closed loop that runs outside the daemon (the
// in-process simulator, `gbdmpc simulate --decision-log`), in the daemon's records, so that replay
// learns from a simulated plant exactly as from a real one. Set Recorder as the controller's
// mpc.Options.Recorder and call BeginStep and FinishStep around each step. One goroutine.
type StepRecorder struct {
	r       decisionRecorder
	version string
}

// NewStepRecorder records plant's steps of family into sink under the agent's policy version (""
// for classical GBD); run tells solve ids of separate runs apart (as the daemon's run id does
// across restarts).
func NewStepRecorder(sink DecisionSink, clock Clock, plant, family, run, policyVersion string) *StepRecorder {
	if clock == nil {
		clock = gbd.RealClock
	}
	return &StepRecorder{r: decisionRecorder{sink: sink, clock: clock, plant: plant, family: family, run: run}, version: policyVersion}
}

// Recorder is the engine's recorder (mpc.Options.Recorder).
func (s *StepRecorder) Recorder() mpc.KindRecorder { return &s.r }

// BeginStep starts the records of the step answering measurement seq.
func (s *StepRecorder) BeginStep(seq uint64, instance json.RawMessage) {
	s.r.begin(seq, seq, s.version, instance)
}

// FinishStep writes the step's solve records.
func (s *StepRecorder) FinishStep(d *mpc.Decision) { s.r.finish(d) }
