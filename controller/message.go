package controller

import (
	"encoding/json"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// newAction builds the action for measurement mseq (its ts_ms is mts), published now. It expires
// one period after the measurement was taken, whenever it happens to be published: a late action
// must not look fresher than the measurement it answers.
func newAction(plant string, seq, mseq uint64, now time.Time, mts int64, period, deadline time.Duration, d *mpc.Decision, policyVersion string, agent bool) *wire.Action {
	a := &wire.Action{
		V: 1, Seq: seq, MeasurementSeq: mseq,
		TSms: now.UnixMilli(), ExpiresMs: mts + period.Milliseconds(),
		Status: d.Status, Apply: d.Apply, Plan: d.Plan, Y: wire.Floats(d.Y),
		Objective: wire.Float(d.Objective), LBD: wire.Float(d.LBD), UBD: wire.Float(d.UBD),
		Iterations: d.Iterations, SolveSeconds: d.SolveSeconds, DeadlineSeconds: deadline.Seconds(),
		Plant: plant, PolicyVersion: policyVersion, Reason: d.Reason, Safe: d.Safe, Fallbacks: d.Fallbacks,
		Relaxed: relaxedOf(d.Relaxed),
	}
	if len(a.Apply) == 0 {
		a.Apply = json.RawMessage("null")
	}
	if len(a.Plan) == 0 {
		a.Plan = json.RawMessage("null")
	}
	if agent {
		a.Agent = agentOf(d.Agent)
	}
	return a
}

// agentOf is the action's "agent" object of a solve's counts.
func agentOf(s gbd.AgentStats) *wire.Agent {
	return &wire.Agent{Proposed: s.Proposed, Feasible: s.Feasible, Accepted: s.Accepted, SolverSelected: s.SolverSelected,
		Repeated: s.Repeated, Final: s.Final, Benched: s.Benched}
}

// relaxedOf is the action's "relaxed" object of a soft solve's shortfall (nil: none).
func relaxedOf(r *mpc.Relaxation) *wire.Relaxed {
	if r == nil {
		return nil
	}
	return &wire.Relaxed{Limit: r.Limit, Bound: r.Bound, Unit: r.Unit, MaxViolation: r.MaxViolation,
		FirstStep: r.FirstStep, WorstStep: r.WorstStep, Unserved: r.Unserved, UnservedUnit: r.UnservedUnit,
		Proof: r.Proof, ProofDetail: r.ProofDetail, Shortfall: r.Shortfall}
}
