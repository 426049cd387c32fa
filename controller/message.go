package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
)

// Rejection reasons: the "reason" label of gbdmpc_controller_rejected_total and the "reason" field
// of an error message.
const (
	ReasonJSON      = "json"          // not a JSON object
	ReasonVersion   = "version"       // "v" is not 1
	ReasonMissing   = "missing_field" // v, seq, ts_ms or a family field is absent
	ReasonNonFinite = "non_finite"    // a number overflows to ±Inf, or a "NaN"/"Inf" string
	ReasonInvalid   = "invalid"       // wrong type, array length or physical range
	ReasonSeq       = "seq"           // seq not greater than the last accepted one
	ReasonStale     = "stale"         // ts_ms older than max_age
	ReasonFuture    = "future"        // ts_ms more than max_age ahead of the daemon's clock
	ReasonStep      = "step"          // the controller could not run the step at all
	// ReasonDeadline: a valid measurement that got no action because its deadline passed first
	// (it waited behind earlier steps, or its step overran); a late action is never published.
	ReasonDeadline = "deadline"
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
		return envelope{}, reject(ReasonJSON, nil, "not a JSON object: %v", err)
	}
	var env envelope
	var seqp *uint64
	if sc.seq != nil {
		if n, err := strconv.ParseUint(string(sc.seq), 10, 64); err == nil {
			env.Seq, seqp = n, &n
		}
	}
	if sc.v == nil {
		return env, reject(ReasonMissing, seqp, `missing "v"`)
	}
	if f, err := strconv.ParseFloat(string(sc.v), 64); err != nil || f != 1 {
		return env, reject(ReasonVersion, seqp, `"v" is %s, want 1`, truncate(sc.v))
	}
	if sc.seq == nil {
		return env, reject(ReasonMissing, nil, `missing "seq"`)
	}
	if seqp == nil {
		return env, reject(ReasonInvalid, nil, `"seq" is %s, want a non-negative integer`, truncate(sc.seq))
	}
	if sc.ts == nil {
		return env, reject(ReasonMissing, seqp, `missing "ts_ms"`)
	}
	var ok bool
	if env.TSms, ok = parseInt(sc.ts); !ok {
		return env, reject(ReasonInvalid, seqp, `"ts_ms" is %s, want Unix milliseconds as an integer`, truncate(sc.ts))
	}
	if sc.nonFinite != "" {
		return env, reject(ReasonNonFinite, seqp, "%s is not a finite number", sc.nonFinite)
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
		return ReasonMissing
	case strings.Contains(msg, "not finite"):
		return ReasonNonFinite
	}
	return ReasonInvalid
}

// Float is a float64 whose JSON form is null when it is not finite: a GBD bound starts at −Inf and a
// fallback has no objective, and encoding/json refuses such values outright.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler; null reads as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	x, err := strconv.ParseFloat(string(bytes.TrimSpace(b)), 64)
	if err != nil {
		return err
	}
	*f = Float(x)
	return nil
}

func floats(xs []float64) []Float {
	out := make([]Float, len(xs))
	for i, x := range xs {
		out[i] = Float(x)
	}
	return out
}

// Agent is the "agent" object of an action (agent runs only).
type Agent struct {
	Proposed       int `json:"proposed"`
	Feasible       int `json:"feasible"`
	Accepted       int `json:"accepted"`
	SolverSelected int `json:"solver_selected"`
	Repeated       int `json:"repeated,omitempty"` // feasible proposals already evaluated (gbd.OutcomeRepeat)
	Final          int `json:"final,omitempty"`    // feasible proposals at the solve's last master step (gbd.OutcomeFinal)
}

// Action is the payload published on <prefix>/<plant>/action. The fields of specs/interfaces.md
// come first; plant, policy_version, agent, reason, safe and fallbacks are additions.
type Action struct {
	V               int             `json:"v"`
	Seq             uint64          `json:"seq"`
	MeasurementSeq  uint64          `json:"measurement_seq"`
	TSms            int64           `json:"ts_ms"`
	ExpiresMs       int64           `json:"expires_ms"`
	Status          string          `json:"status"`
	Apply           json.RawMessage `json:"apply"`
	Plan            json.RawMessage `json:"plan"`
	Y               []Float         `json:"y"`
	Objective       Float           `json:"objective"`
	LBD             Float           `json:"lbd"`
	UBD             Float           `json:"ubd"`
	Iterations      int             `json:"iterations"`
	SolveSeconds    float64         `json:"solve_seconds"`
	DeadlineSeconds float64         `json:"deadline_seconds"`
	Plant           string          `json:"plant"`
	PolicyVersion   string          `json:"policy_version"`
	Agent           *Agent          `json:"agent,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	Safe            bool            `json:"safe,omitempty"`
	Fallbacks       int             `json:"fallbacks,omitempty"`
	// Node is the publishing daemon's name in its HA group (configs.HA; empty without HA), and
	// Instance its process's random id.
	Node     string `json:"node,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Relaxed is present only when the plant's hard limits cannot all be held over the horizon: the
	// action is then the soft problem's optimum and this says which limit it breaks, by how much
	// and from which plan step (mpc.Relaxation; specs/interfaces.md).
	Relaxed *mpc.Relaxation `json:"relaxed,omitempty"`
	// Epoch is the HA election's epoch under which the daemon answered the measurement: a fencing
	// token, never lower than any epoch of an earlier action (ha.go). A plant drops an action whose
	// epoch is lower than the highest it has seen. Absent (0) without HA, where one daemon serves.
	Epoch uint64 `json:"epoch,omitempty"`
}

// newAction builds the action for measurement mseq (its ts_ms is mts), published now. It expires
// one period after the measurement was taken, whenever it happens to be published: a late action
// must not look fresher than the measurement it answers.
func newAction(plant string, seq, mseq uint64, now time.Time, mts int64, period, deadline time.Duration, d *mpc.Decision, policyVersion string, agent bool) *Action {
	a := &Action{
		V: 1, Seq: seq, MeasurementSeq: mseq,
		TSms: now.UnixMilli(), ExpiresMs: mts + period.Milliseconds(),
		Status: d.Status, Apply: d.Apply, Plan: d.Plan, Y: floats(d.Y),
		Objective: Float(d.Objective), LBD: Float(d.LBD), UBD: Float(d.UBD),
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
		a.Agent = agentJSON(d.Agent)
	}
	return a
}

func agentJSON(s gbd.AgentStats) *Agent {
	return &Agent{Proposed: s.Proposed, Feasible: s.Feasible, Accepted: s.Accepted, SolverSelected: s.SolverSelected,
		Repeated: s.Repeated, Final: s.Final}
}

// Status states of <prefix>/<plant>/status.
const (
	StateOnline   = "online"
	StateDegraded = "degraded"
	StateOffline  = "offline"
)

// Status is the retained payload of <prefix>/<plant>/status (also the Last Will, with state offline).
type Status struct {
	V     int    `json:"v"`
	State string `json:"state"`
	TSms  int64  `json:"ts_ms"`
	// Plant is the plant this topic belongs to; Plants lists every plant this daemon serves, so a
	// dashboard reading one status topic can find the others.
	Plant  string   `json:"plant"`
	Plants []string `json:"plants"`
	// PolicyVersion is the plant's agent (empty for classical GBD).
	PolicyVersion string `json:"policy_version"`
	Reason        string `json:"reason,omitempty"`
	// Alarm reports a fault that does not stop control but loses something, such as decision
	// records, or a plant whose hard limits cannot be held (a relaxed action; the state is then
	// degraded). Empty: none. Several alarms are joined with "; ".
	Alarm string `json:"alarm,omitempty"`
	// Node, Instance and Epoch are set by a daemon of an HA group (ha.go): its name, its
	// process's random id, and the epoch of the claim that made it the plant's active daemon (0 in
	// a Last Will, written before any claim).
	Node     string `json:"node,omitempty"`
	Instance string `json:"instance,omitempty"`
	Epoch    uint64 `json:"epoch,omitempty"`
}

// ErrorMessage is the payload of <prefix>/<plant>/error. Seq is the rejected message's own seq, null
// when it could not be read. Suppressed is how many error messages the plant's rate limit withheld
// since the previous one (gate.go); their rejections are all counted in the metrics.
type ErrorMessage struct {
	V          int     `json:"v"`
	TSms       int64   `json:"ts_ms"`
	Seq        *uint64 `json:"seq"`
	Error      string  `json:"error"`
	Reason     string  `json:"reason"`
	Plant      string  `json:"plant"`
	Suppressed uint64  `json:"suppressed,omitempty"`
}
