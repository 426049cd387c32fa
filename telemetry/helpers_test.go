package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"gbdmpc/internal/fakeclock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newFakeClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// masterRecord is a typical master record: ncuts cuts over ny binaries.
func masterRecord(rng *rand.Rand, i, ny, ncuts int) *Record {
	vec := func(n int) []float64 {
		v := make([]float64, n)
		for j := range v {
			v[j] = rng.NormFloat64() * 100
		}
		return v
	}
	bin := func(n int) []float64 {
		v := make([]float64, n)
		for j := range v {
			v[j] = float64(rng.IntN(2))
		}
		return v
	}
	cuts := make([]CutRecord, ncuts)
	for j := range cuts {
		kind := CutOptimality
		if rng.IntN(4) == 0 {
			kind = CutFeasibility
		}
		cuts[j] = CutRecord{Kind: kind, Coef: vec(ny), Const: rng.NormFloat64(), Iter: j - 1, Carried: j == 0}
	}
	logits := Nums(vec(8))
	logits[3] = Num(math.Inf(-1)) // a masked action
	return &Record{
		V:             SchemaVersion,
		Type:          TypeMaster,
		TSms:          1_772_366_400_000 + int64(i)*250,
		Plant:         fmt.Sprintf("plant-%d", i%3),
		Family:        "synthesis",
		SolveID:       fmt.Sprintf("solve-%d", i/5),
		Step:          uint64(i / 5),
		PolicyVersion: "v0.3.1",
		Master: &MasterRecord{
			Iter:         i % 5,
			NY:           ny,
			YpbSignature: "9f2c",
			YpbCount:     8,
			Cuts:         cuts,
			Prev:         bin(ny),
			Instance:     json.RawMessage(fmt.Sprintf(`{"horizon":%d,"demand":[1.5,2.25]}`, 4+i%7)),
			Proposal: &ProposalRecord{
				Index: rng.IntN(8), Y: bin(ny), Logits: logits, Outcome: OutcomeAccepted,
			},
			TkSeconds:     Num(rng.Float64()),
			LBD:           Num(math.Inf(-1)),
			UBD:           Num(math.Inf(1)),
			MasterSeconds: rng.Float64() / 100,
			MasterStatus:  "optimal",
			MasterY:       bin(ny),
			MasterMu:      Num(math.NaN()),
			MasterBound:   Num(-rng.Float64() * 1e6),
			Chosen:        bin(ny),
		},
	}
}

func solveRecord(i int) *Record {
	return &Record{
		V: SchemaVersion, Type: TypeSolve, TSms: 1_772_366_400_000 + int64(i)*250,
		Plant: fmt.Sprintf("plant-%d", i%3), Family: "pumpstation", SolveID: fmt.Sprintf("solve-%d", i/5),
		Solve: &SolveRecord{
			Status: "optimal", Y: []float64{1, 0, 1}, Objective: 12.5, LBD: 12.4, UBD: 12.5, Iterations: 3,
			MasterSeconds: 0.01, SubproblemSeconds: 0.2, TotalSeconds: 0.25,
			Agent:    &AgentStats{Proposed: 3, Feasible: 2, Accepted: 2, SolverSelected: 1},
			Instance: json.RawMessage(`{"pumps":3}`), Message: fmt.Sprintf("solve %d", i),
		},
	}
}

// variedRecords returns n records of varied sizes, seeded.
func variedRecords(seed uint64, n int) []*Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]*Record, n)
	for i := range out {
		if i%5 == 4 {
			out[i] = solveRecord(i)
			continue
		}
		out[i] = masterRecord(rng, i, 1+rng.IntN(12), rng.IntN(13))
	}
	return out
}

// canonical is a record's encoding, the equality used to compare records: it is exact for floats
// (shortest round-trip formatting) and treats NaN as equal to NaN.
func canonical(t testing.TB, r *Record) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

func assertRecords(t testing.TB, got, want []*Record) {
	t.Helper()
	assertCanonical(t, got, canonicals(t, want))
}

func canonicals(t testing.TB, recs []*Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = canonical(t, r)
	}
	return out
}

// assertCanonical compares records with the canonical encodings of the wanted ones.
func assertCanonical(t testing.TB, got []*Record, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if g := canonical(t, got[i]); g != want[i] {
			t.Fatalf("record %d:\n got %s\nwant %s", i, g, want[i])
		}
	}
}

// readAll reads every record under paths, failing the test on any error.
func readAll(t testing.TB, paths ...string) ([]*Record, *Reader) {
	t.Helper()
	r, err := NewReader(paths...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, err := r.ReadAll(Filter{})
	if err != nil {
		t.Fatalf("after %d records: %v", len(out), err)
	}
	return out, r
}

func mustOpen(t testing.TB, dir string, opt LogOptions, clock Clock) *DecisionLog {
	t.Helper()
	l, err := Open(dir, opt, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustClose(t testing.TB, l *DecisionLog) {
	t.Helper()
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func mustSync(t testing.TB, l *DecisionLog) {
	t.Helper()
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func writeAll(t testing.TB, l *DecisionLog, recs []*Record) {
	t.Helper()
	for i, r := range recs {
		if !l.Write(r) {
			t.Fatalf("Write(record %d) = false", i)
		}
	}
}

// segmentFiles lists the segment file names in dir, sorted.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, segmentPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range matches {
		if _, _, ok := parseSegmentName(filepath.Base(m)); ok {
			out = append(out, filepath.Base(m))
		}
	}
	return out
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 11)) }

// readPastCorrupt reads path with Next to its end, going on after corrupt lines and segments as
// Next does; it returns the records and the last *CorruptError. Any other error fails the test.
func readPastCorrupt(t *testing.T, path string) ([]*Record, *CorruptError) {
	t.Helper()
	r, err := NewReader(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []*Record
	var corrupt *CorruptError
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return got, corrupt
		}
		if errors.As(err, &corrupt) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v is not a *CorruptError", path, err)
		}
		got = append(got, rec)
	}
}
