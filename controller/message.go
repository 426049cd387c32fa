package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// rejection is why a measurement got no action. seq is the message's own sequence number when it
// could be read.
type rejection struct {
	reason string
	msg    string
	seq    *uint64
}

func (r *rejection) Error() string { return r.reason + ": " + r.msg }

func reject(reason string, seq *uint64, format string, args ...any) *rejection {
	return &rejection{reason: reason, msg: fmt.Sprintf(format, args...), seq: seq}
}

// envelope is the daemon's part of a measurement; the family decodes the rest.
type envelope struct {
	Seq  uint64
	TSms int64
}

// decodeEnvelope checks what every measurement carries, whatever its family: a JSON object with
// "v":1, an integer "seq" ≥ 0, an integer "ts_ms", and no number that is not finite anywhere. It
// reads the payload once, without decoding it (scan.go); the family's decoder is the one decode.
func decodeEnvelope(payload []byte) (envelope, *rejection) {
	sc, err := scanMeasurement(payload)
	if err != nil {
		return envelope{}, reject(wire.ReasonJSON, nil, "not a JSON object: %v", err)
	}
	var env envelope
	var seqp *uint64
	if sc.seq != nil {
		if n, err := strconv.ParseUint(string(sc.seq), 10, 64); err == nil {
			env.Seq, seqp = n, &n
		}
	}
	if sc.v == nil {
		return env, reject(wire.ReasonMissing, seqp, `missing "v"`)
	}
	if f, err := strconv.ParseFloat(string(sc.v), 64); err != nil || f != 1 {
		return env, reject(wire.ReasonVersion, seqp, `"v" is %s, want 1`, truncate(sc.v))
	}
	if sc.seq == nil {
		return env, reject(wire.ReasonMissing, nil, `missing "seq"`)
	}
	if seqp == nil {
		return env, reject(wire.ReasonInvalid, nil, `"seq" is %s, want a non-negative integer`, truncate(sc.seq))
	}
	if sc.ts == nil {
		return env, reject(wire.ReasonMissing, seqp, `missing "ts_ms"`)
	}
	var ok bool
	if env.TSms, ok = parseInt(sc.ts); !ok {
		return env, reject(wire.ReasonInvalid, seqp, `"ts_ms" is %s, want Unix milliseconds as an integer`, truncate(sc.ts))
	}
	if sc.nonFinite != "" {
		return env, reject(wire.ReasonNonFinite, seqp, "%s is not a finite number", sc.nonFinite)
	}
	return env, nil
}

func parseInt(b json.RawMessage) (int64, bool) {
	s := string(bytes.TrimSpace(b))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	// 1.7e12 is an integer written in exponent form; accept it when it is whole.
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func truncate(b json.RawMessage) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func pathOr(p string) string {
	if p == "" {
		return "the payload"
	}
	return p
}

// familyReason classifies a family's decode error for the metric label. Families wrap their own
// error types, so the message is all there is to go on; anything unrecognised counts as invalid.
func familyReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "missing "):
		return wire.ReasonMissing
	case strings.Contains(msg, "not finite"):
		return wire.ReasonNonFinite
	}
	return wire.ReasonInvalid
}

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
		Relaxed: d.Relaxed,
	}
	if len(a.Apply) == 0 {
		a.Apply = json.RawMessage("null")
	}
	if len(a.Plan) == 0 {
		a.Plan = json.RawMessage("null")
	}
	if agent {
		a.Agent = wire.AgentOf(d.Agent)
	}
	return a
}
