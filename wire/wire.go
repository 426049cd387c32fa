// Package wire holds the payloads of specs/interfaces.md's MQTT contract as Go types and codecs:
// the measurement envelope a plant publishes, and the action, status and error messages the daemon
// publishes. The daemon (controller), the MQTT testbed, soak and load runners (testbed), the
// simulator and the tests all speak through it, so a field is spelled in one place.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
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
	ReasonTooLarge  = "too_large"     // payload above max_payload_bytes, refused before parsing
	ReasonStep      = "step"          // the controller could not run the step at all
	// ReasonDeadline: a valid measurement that got no action because its deadline passed first
	// (it waited behind earlier steps, or its step overran); a late action is never published.
	ReasonDeadline = "deadline"
	// ReasonSuperseded: a valid measurement passed over because a newer one was already waiting
	// and the recent solves left no time to answer both before the newer one's deadline.
	ReasonSuperseded = "superseded"
)

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

// Floats converts a slice.
func Floats(xs []float64) []Float {
	out := make([]Float, len(xs))
	for i, x := range xs {
		out[i] = Float(x)
	}
	return out
}

// Agent is the "agent" object of an action or a solve's result (agent runs only): what the learned
// agent proposed in the solve and what became of it. The solver counts the same things in its own
// type; the daemon and the solve command convert at their edge.
type Agent struct {
	Proposed       int `json:"proposed"`
	Feasible       int `json:"feasible"`
	Accepted       int `json:"accepted"`
	SolverSelected int `json:"solver_selected"`
	Repeated       int `json:"repeated,omitempty"` // feasible proposals already evaluated
	Final          int `json:"final,omitempty"`    // feasible proposals at the solve's last master step
	Benched        int `json:"benched,omitempty"`  // master steps without the agent: out of patience or of time
}

// Relaxed is the "relaxed" object of an action: present only when the plant's hard limits cannot
// all be held over the horizon, so that the action is the soft problem's optimum. It says which
// limit breaks, by how much and from which plan step (specs/interfaces.md §2). The MPC layer
// computes the same figures in its own type; the daemon converts at its edge.
type Relaxed struct {
	// Limit is the limit violated the most, as the family's configuration names it (the pump
	// station: "level_min_m" or "level_max_m"), Bound its value and Unit their unit.
	Limit string  `json:"limit"`
	Bound float64 `json:"bound"`
	Unit  string  `json:"unit"`
	// MaxViolation is the largest predicted violation of any limit, in Unit, at plan step
	// WorstStep; FirstStep is the first plan step at which any limit is violated.
	MaxViolation float64 `json:"max_violation"`
	FirstStep    int     `json:"first_step"`
	WorstStep    int     `json:"worst_step"`
	// Unserved is the demand the plan cannot serve over the horizon, in UnservedUnit.
	Unserved     float64 `json:"unserved"`
	UnservedUnit string  `json:"unserved_unit"`
	// Proof says how the hard problem was shown infeasible ("precheck", "gbd" or "soft_bound"),
	// and ProofDetail the certificate's own words.
	Proof       string `json:"proof"`
	ProofDetail string `json:"proof_detail,omitempty"`
	// Shortfall is one line naming the shortfall, for the status alarm and logs.
	Shortfall string `json:"shortfall"`
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
	// Relaxed is present only when the plant's hard limits cannot all be held over the horizon
	// (Relaxed; specs/interfaces.md).
	Relaxed *Relaxed `json:"relaxed,omitempty"`
	// Epoch is the HA election's epoch under which the daemon answered the measurement: a fencing
	// token, never lower than any epoch of an earlier action (ha.go). A plant drops an action whose
	// epoch is lower than the highest it has seen. Absent (0) without HA, where one daemon serves.
	Epoch uint64 `json:"epoch,omitempty"`
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

// Measurement is a measurement payload: the family's fields (a JSON object, such as a
// pumpstation.Instance or synthesis.Instance marshals to, with its FieldV) with the envelope's
// FieldSeq and FieldTS (Unix milliseconds) put first.
func Measurement(seq uint64, tsMs int64, fields any) ([]byte, error) {
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("wire: measurement fields: %w", err)
	}
	body = bytes.TrimSpace(body)
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("wire: measurement fields are not a JSON object")
	}
	out := make([]byte, 0, len(body)+48)
	out = append(out, '{')
	out = append(out, keySeq...)
	out = append(out, ':')
	out = strconv.AppendUint(out, seq, 10)
	out = append(out, ',')
	out = append(out, keyTS...)
	out = append(out, ':')
	out = strconv.AppendInt(out, tsMs, 10)
	if rest := bytes.TrimSpace(body[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// ErrorOf is the error topic's payload for a rejection, at tsMs.
func ErrorOf(r *Rejection, plant string, tsMs int64, suppressed uint64) ErrorMessage {
	return ErrorMessage{V: Version, TSms: tsMs, Seq: r.Seq, Error: r.Msg, Reason: r.Reason, Plant: plant, Suppressed: suppressed}
}

// FamilyReason classifies a plant family's decode error for the rejection's reason. Families wrap
// their own error types, so the message is all there is to go on; anything unrecognised counts as
// invalid.
func FamilyReason(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "missing "):
		return ReasonMissing
	case strings.Contains(msg, "not finite"):
		return ReasonNonFinite
	}
	return ReasonInvalid
}
