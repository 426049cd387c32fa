package wire

import (
	"bytes"
	"encoding/json"
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

// DecodeEnvelope checks what every measurement carries, whatever its family: a JSON object with
// "v":1, an integer "seq" ≥ 0, an integer "ts_ms", and no number that is not finite anywhere. It
// reads the payload once, without decoding it (scanMeasurement); the family's decoder is the one decode.
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

// scanMeasurement reads a measurement's envelope in one pass over the bytes, without building
// anything: it checks that the payload is one JSON object and nothing else (the syntax of
// encoding/json), finds the top-level envelope fields (FieldV, FieldSeq, FieldTS; the last of each, as a decoder
// would), and notes the first number that overflows float64 or string that spells a non-finite
// number, anywhere. The family's decoder is then the only decode of the payload.
//
// The result is the raw bytes of the three fields, nil when absent, and the path of the first
// non-finite value ("" when none).
type scanned struct {
	v, seq, ts []byte
	nonFinite  string
}

type scanFrame struct {
	array bool
	index int
	key   []byte // raw key token, quotes included
}

type scanner struct {
	b     []byte
	i     int
	stack []scanFrame
	out   scanned
	found bool
}

// scanErr is a syntax error at an offset, worded like encoding/json's.
type scanErr struct {
	off int
	msg string
}

func (e *scanErr) Error() string { return fmt.Sprintf("%s (offset %d)", e.msg, e.off) }

func scanMeasurement(payload []byte) (scanned, error) {
	s := scanner{b: payload, stack: make([]scanFrame, 0, 8)}
	s.space()
	if s.i >= len(s.b) {
		return scanned{}, &scanErr{s.i, "unexpected end of JSON input"}
	}
	if s.b[s.i] != '{' {
		return scanned{}, &scanErr{s.i, fmt.Sprintf("want a JSON object, found %q", s.b[s.i])}
	}
	if err := s.value(0); err != nil {
		return scanned{}, err
	}
	s.space()
	if s.i < len(s.b) {
		return scanned{}, &scanErr{s.i, "invalid character " + strconv.QuoteRune(rune(s.b[s.i])) + " after top-level value"}
	}
	return s.out, nil
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eof() error { return &scanErr{s.i, "unexpected end of JSON input"} }

func (s *scanner) bad(what string) error {
	if s.i >= len(s.b) {
		return s.eof()
	}
	return &scanErr{s.i, "invalid character " + strconv.QuoteRune(rune(s.b[s.i])) + " " + what}
}

// value scans one value at s.i (whitespace skipped by the caller); depth 1 is the top object's
// members.
func (s *scanner) value(depth int) error {
	if depth > 10000 {
		return &scanErr{s.i, "exceeded max depth"}
	}
	if s.i >= len(s.b) {
		return s.eof()
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		start := s.i
		if err := s.str(); err != nil {
			return err
		}
		s.checkString(s.b[start:s.i])
		return nil
	case c == '-' || c >= '0' && c <= '9':
		start := s.i
		if err := s.number(); err != nil {
			return err
		}
		s.checkNumber(s.b[start:s.i])
		return nil
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	}
	return s.bad("looking for beginning of value")
}

func (s *scanner) word(w string) error {
	for k := 0; k < len(w); k++ {
		if s.i >= len(s.b) {
			return s.eof()
		}
		if s.b[s.i] != w[k] {
			return s.bad("in literal " + w)
		}
		s.i++
	}
	return nil
}

func (s *scanner) object(depth int) error {
	s.i++ // '{'
	s.stack = append(s.stack, scanFrame{})
	defer func() { s.stack = s.stack[:len(s.stack)-1] }()
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		if s.i >= len(s.b) {
			return s.eof()
		}
		if s.b[s.i] != '"' {
			return s.bad("looking for beginning of object key string")
		}
		start := s.i
		if err := s.str(); err != nil {
			return err
		}
		key := s.b[start:s.i]
		s.stack[len(s.stack)-1].key = key
		s.space()
		if s.i >= len(s.b) {
			return s.eof()
		}
		if s.b[s.i] != ':' {
			return s.bad("after object key")
		}
		s.i++
		s.space()
		vstart := s.i
		if err := s.value(depth); err != nil {
			return err
		}
		if depth == 1 {
			switch string(key) {
			case keyV:
				s.out.v = s.b[vstart:s.i]
			case keySeq:
				s.out.seq = s.b[vstart:s.i]
			case keyTS:
				s.out.ts = s.b[vstart:s.i]
			}
		}
		if end, err := s.next('}', "after object key:value pair"); end || err != nil {
			return err
		}
	}
}

func (s *scanner) array(depth int) error {
	s.i++ // '['
	s.stack = append(s.stack, scanFrame{array: true})
	defer func() { s.stack = s.stack[:len(s.stack)-1] }()
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		s.stack[len(s.stack)-1].index = n
		s.space()
		if err := s.value(depth); err != nil {
			return err
		}
		if end, err := s.next(']', "after array element"); end || err != nil {
			return err
		}
	}
}

// next reads what follows a member of an object or array: a comma (another member follows), or
// the closing delimiter (end).
func (s *scanner) next(closing byte, where string) (end bool, err error) {
	s.space()
	if s.i >= len(s.b) {
		return true, s.eof()
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case closing:
		s.i++
		return true, nil
	}
	return true, s.bad(where)
}

// str scans a string token: escapes as JSON defines them, no raw control characters.
func (s *scanner) str() error {
	s.i++ // opening quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c == '\\':
			s.i++
			if s.i >= len(s.b) {
				return s.eof()
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for k := 0; k < 4; k++ {
					if s.i >= len(s.b) {
						return s.eof()
					}
					if !isHex(s.b[s.i]) {
						return s.bad("in \\u hexadecimal character escape")
					}
					s.i++
				}
			default:
				return s.bad("in string escape code")
			}
		case c < 0x20:
			return s.bad("in string literal")
		default:
			s.i++
		}
	}
	return s.eof()
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i >= len(s.b) {
		return s.eof()
	}
	switch c := s.b[s.i]; {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	default:
		return s.bad("in numeric literal")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if err := s.digits("after decimal point in numeric literal"); err != nil {
			return err
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if err := s.digits("in exponent of numeric literal"); err != nil {
			return err
		}
	}
	return nil
}

// digits scans [0-9]+; where is the literal's part, for the error when no digit comes.
func (s *scanner) digits(where string) error {
	if s.i >= len(s.b) {
		return s.eof()
	}
	if !isDigit(s.b[s.i]) {
		return s.bad(where)
	}
	for s.i < len(s.b) && isDigit(s.b[s.i]) {
		s.i++
	}
	return nil
}

// checkNumber notes a literal that overflows float64 (1e999 would decode as ±Inf). Only one with
// an exponent or more than 300 characters can.
func (s *scanner) checkNumber(lit []byte) {
	if s.found || len(lit) <= 300 && bytes.IndexAny(lit, "eE") < 0 {
		return
	}
	if f, _ := strconv.ParseFloat(string(lit), 64); math.IsInf(f, 0) {
		s.note()
	}
}

// nonFiniteWords are the spellings of a non-finite number that producers write as strings, since
// JSON has no NaN or Infinity.
var nonFiniteWords = []string{"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}

// checkString notes a string spelling a non-finite number (case and surrounding space ignored).
func (s *scanner) checkString(tok []byte) {
	if s.found || len(tok) > 256 {
		return
	}
	body := tok[1 : len(tok)-1]
	var text string
	if bytes.IndexByte(body, '\\') >= 0 {
		if json.Unmarshal(tok, &text) != nil {
			return
		}
	} else {
		text = string(bytes.TrimSpace(body)) // the common case: no copy beyond a short string
	}
	text = strings.TrimSpace(text)
	if len(text) > len("+infinity") {
		return
	}
	for _, w := range nonFiniteWords {
		if strings.EqualFold(text, w) {
			s.note()
			return
		}
	}
}

// note records the path of the value just scanned as the first non-finite one.
func (s *scanner) note() {
	s.found = true
	var b strings.Builder
	for k, f := range s.stack {
		if f.array {
			fmt.Fprintf(&b, "[%d]", f.index)
			continue
		}
		var key string
		if json.Unmarshal(f.key, &key) != nil {
			key = string(f.key)
		}
		if k > 0 {
			b.WriteByte('.')
		}
		fmt.Fprintf(&b, "%q", key)
	}
	s.out.nonFinite = pathOr(b.String())
}
