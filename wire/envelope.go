package wire

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The envelope's fields, which every payload of the contract carries (specs/interfaces.md): the
// contract's version, a measurement's sequence number and its timestamp. They are spelled here
// and nowhere else; the payload types' struct tags name the same fields.
const (
	FieldV   = "v"
	FieldSeq = "seq"
	FieldTS  = "ts_ms"
)

// The raw key tokens the scanner compares against: the field names with their quotes.
const (
	keyV   = `"` + FieldV + `"`
	keySeq = `"` + FieldSeq + `"`
	keyTS  = `"` + FieldTS + `"`
)

// Version is the contract's version, the value of FieldV in every payload.
const Version = 1

// Envelope is the daemon's part of a measurement; the plant family decodes the rest.
type Envelope struct {
	Seq  uint64
	TSms int64
}

// Rejection is why a measurement gets no action: a reason of the contract (the Reason* constants),
// a message for the error topic, and the message's own sequence number when it could be read.
type Rejection struct {
	Reason string
	Msg    string
	Seq    *uint64
}

func (r *Rejection) Error() string { return r.Reason + ": " + r.Msg }

// Reject is a rejection for reason with a formatted message.
func Reject(reason string, seq *uint64, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Msg: fmt.Sprintf(format, args...), Seq: seq}
}

// ErrorOf is the error topic's payload for a rejection, at tsMs.
func ErrorOf(r *Rejection, plant string, tsMs int64, suppressed uint64) ErrorMessage {
	return ErrorMessage{V: Version, TSms: tsMs, Seq: r.Seq, Error: r.Msg, Reason: r.Reason, Plant: plant, Suppressed: suppressed}
}

// DecodeEnvelope checks what every measurement carries, whatever its family: a JSON object with
// "v":1, an integer "seq" ≥ 0, an integer "ts_ms", and no number that is not finite anywhere. It
// reads the payload once, without decoding it (scan.go); the family's decoder is the one decode.
func DecodeEnvelope(payload []byte) (Envelope, *Rejection) {
	sc, err := scanMeasurement(payload)
	if err != nil {
		return Envelope{}, Reject(ReasonJSON, nil, "not a JSON object: %v", err)
	}
	var env Envelope
	var seqp *uint64
	if sc.seq != nil {
		if n, err := strconv.ParseUint(string(sc.seq), 10, 64); err == nil {
			env.Seq, seqp = n, &n
		}
	}
	if sc.v == nil {
		return env, Reject(ReasonMissing, seqp, "missing %q", FieldV)
	}
	if f, err := strconv.ParseFloat(string(sc.v), 64); err != nil || f != Version {
		return env, Reject(ReasonVersion, seqp, "%q is %s, want %d", FieldV, truncate(sc.v), Version)
	}
	if sc.seq == nil {
		return env, Reject(ReasonMissing, nil, "missing %q", FieldSeq)
	}
	if seqp == nil {
		return env, Reject(ReasonInvalid, nil, "%q is %s, want a non-negative integer", FieldSeq, truncate(sc.seq))
	}
	if sc.ts == nil {
		return env, Reject(ReasonMissing, seqp, "missing %q", FieldTS)
	}
	var ok bool
	if env.TSms, ok = parseInt(sc.ts); !ok {
		return env, Reject(ReasonInvalid, seqp, "%q is %s, want Unix milliseconds as an integer", FieldTS, truncate(sc.ts))
	}
	if sc.nonFinite != "" {
		return env, Reject(ReasonNonFinite, seqp, "%s is not a finite number", sc.nonFinite)
	}
	return env, nil
}

func parseInt(b []byte) (int64, bool) {
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

func truncate(b []byte) string {
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
