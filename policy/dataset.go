package policy

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"gbdmpc/gbd"
	"gbdmpc/telemetry"
)

// Sample is one expert demonstration: a master problem (its cuts and previous iterate) and the
// master's exact optimum, as its index in an enumerated Y_pb or as the assignment itself in an
// implicit one.
type Sample struct {
	Cuts  []gbd.Cut
	Prev  []float64
	Label int     // expert index in an enumerated Y_pb (−1 in an implicit one)
	Y     []uint8 // the expert assignment in an implicit Y_pb (nil in an enumerated one)
	Set   int     // parameter-set id; splits never separate a set
}

// Bits is the expert assignment of s as 0/1 values (shared with the dataset: read only).
func (s *Sample) Bits(ypb *gbd.Admissible) []uint8 { return s.bits(ypb) }

// bits is the expert assignment of s as 0/1 values.
func (s *Sample) bits(ypb *gbd.Admissible) []uint8 {
	if ypb.Implicit() {
		return s.Y
	}
	return ypb.At(s.Label)
}

// Dataset is a family's demonstrations over one action space.
type Dataset struct {
	Family  string
	Ypb     *gbd.Admissible
	Samples []Sample
}

// Version 2 added sampleRecord.CutsFrom; version 1 files (every sample whole) still read.
const (
	datasetFormat  = "gbdmpc-dataset"
	datasetVersion = 2
)

// Validate reports the first problem that would make the dataset unusable for training: a missing
// action space, or a sample whose dimensions, values or label do not fit it.
func (ds *Dataset) Validate() error {
	if ds.Family == "" {
		return errors.New("dataset: empty family")
	}
	if ds.Ypb == nil || ds.Ypb.NY <= 0 || ds.Ypb.Empty() {
		return errors.New("dataset: empty admissible set")
	}
	for i := range ds.Samples {
		if err := checkSample(&ds.Samples[i], ds.Ypb); err != nil {
			return fmt.Errorf("dataset: sample %d: %w", i, err)
		}
	}
	return nil
}

func checkSample(s *Sample, ypb *gbd.Admissible) error {
	if ypb.Implicit() {
		if len(s.Y) != ypb.NY {
			return fmt.Errorf("expert assignment has %d binaries, want %d", len(s.Y), ypb.NY)
		}
		for i, v := range s.Y {
			if v > 1 {
				return fmt.Errorf("expert assignment value %d is %d, not binary", i, v)
			}
		}
		if !ypb.Contains(gbd.Floats(make([]float64, len(s.Y)), s.Y)) {
			return errors.New("expert assignment is not in Y_pb")
		}
		return checkMaster(s.Cuts, s.Prev, ypb.NY)
	}
	if s.Y != nil {
		return errors.New("an assignment label in an enumerated Y_pb (labels are indices there)")
	}
	if s.Label < 0 || s.Label >= ypb.Count() {
		return fmt.Errorf("label %d out of range [0,%d)", s.Label, ypb.Count())
	}
	return checkMaster(s.Cuts, s.Prev, ypb.NY)
}

// checkMaster validates what the graph encoding reads; it does not allocate unless it fails.
func checkMaster(cuts []gbd.Cut, prev []float64, ny int) error {
	if len(prev) != ny {
		return fmt.Errorf("previous iterate has %d values, want %d", len(prev), ny)
	}
	for i, v := range prev {
		if !finite(v) {
			return fmt.Errorf("previous iterate value %d is %v", i, v)
		}
	}
	for k := range cuts {
		c := &cuts[k]
		if c.Kind != gbd.OptimalityCut && c.Kind != gbd.FeasibilityCut {
			return fmt.Errorf("cut %d: unknown kind %d", k, uint8(c.Kind))
		}
		if len(c.Coef) != ny {
			return fmt.Errorf("cut %d: %d coefficients, want %d", k, len(c.Coef), ny)
		}
		if !finite(c.Const) {
			return fmt.Errorf("cut %d: constant is %v", k, c.Const)
		}
		for i, a := range c.Coef {
			if !finite(a) {
				return fmt.Errorf("cut %d: coefficient %d is %v", k, i, a)
			}
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// On-disk records. Cut kinds are spelled out and Y_pb rows are "0101…" strings so that a file can be
// read with zcat.
type datasetHeader struct {
	Format string `json:"format"`
	V      int    `json:"v"`
	Family string `json:"family"`
	NY     int    `json:"ny"`
	ypbRecord
	Signature string `json:"signature"`
	Samples   int    `json:"samples"`
}

type sampleRecord struct {
	Set   int                   `json:"set"`
	Label int                   `json:"label"`
	Y     string                `json:"y,omitempty"` // the expert assignment "0101…" in an implicit Y_pb
	Prev  []float64             `json:"prev"`
	Cuts  []telemetry.CutRecord `json:"cuts"` // the decision log's cut codec
	// CutsFrom says that the sample's first CutsFrom cuts are the previous sample's (same set), and
	// Cuts holds the rest: the masters of one GBD run share all but their newest cuts, so a file of
	// K-iteration runs stores O(K) cuts a run, not O(K²), and the samples read back share them.
	CutsFrom int `json:"cuts_from,omitempty"`
}

// sharedPrefix is how many leading cuts of s are the cuts of prev, a sample of the same set.
func sharedPrefix(prev, s *Sample) int {
	if prev == nil || prev.Set != s.Set || !isPrefix(prev.Cuts, s.Cuts) {
		return 0
	}
	return len(prev.Cuts)
}

// SaveDataset writes ds as gzip'd JSON Lines: a header line (format, version, family, NY, the ordered
// Y_pb and its signature, sample count) followed by one line per sample. The file is replaced
// atomically.
func SaveDataset(path string, ds *Dataset) error {
	if err := ds.Validate(); err != nil {
		return fmt.Errorf("save dataset %s: %w", path, err)
	}
	err := writeAtomic(path, func(w io.Writer) error {
		zw := gzip.NewWriter(w)
		enc := json.NewEncoder(zw)
		h := datasetHeader{Format: datasetFormat, V: datasetVersion, Family: ds.Family, NY: ds.Ypb.NY,
			Signature: ds.Ypb.Signature, Samples: len(ds.Samples)}
		h.ypbRecord = ypbRecordOf(ds.Ypb)
		if err := enc.Encode(&h); err != nil {
			return err
		}
		var prev *Sample
		for i := range ds.Samples {
			s := &ds.Samples[i]
			from := sharedPrefix(prev, s)
			prev = s
			r := sampleRecord{Set: s.Set, Label: s.Label, Y: bitString(s.Y), Prev: s.Prev, CutsFrom: from,
				Cuts: make([]telemetry.CutRecord, len(s.Cuts)-from)}
			for k := range r.Cuts {
				r.Cuts[k] = telemetry.CutRecordOf(&s.Cuts[from+k])
			}
			if err := enc.Encode(&r); err != nil {
				return fmt.Errorf("sample %d: %w", i, err)
			}
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("save dataset %s: %w", path, err)
	}
	return nil
}

// LoadDataset reads a file written by SaveDataset and validates every sample against the header's Y_pb.
func LoadDataset(path string) (*Dataset, error) { return load(path, "dataset", ReadDataset) }

// ReadDataset decodes the SaveDataset format from r.
func ReadDataset(r io.Reader) (*Dataset, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("not a gzip stream: %w", err)
	}
	dec := json.NewDecoder(zr)
	dec.DisallowUnknownFields()
	var h datasetHeader
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("header: %w", streamErr(err))
	}
	if h.Format != datasetFormat {
		return nil, fmt.Errorf("header: format %q, want %q", h.Format, datasetFormat)
	}
	if h.V != datasetVersion && h.V != 1 {
		return nil, fmt.Errorf("header: unsupported version %d (this build reads versions 1 to %d)", h.V, datasetVersion)
	}
	ypb, err := h.read(h.NY, h.Signature)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if h.Family == "" {
		return nil, errors.New("header: empty family")
	}
	if h.Samples < 0 {
		return nil, fmt.Errorf("header: negative sample count %d", h.Samples)
	}
	ds := &Dataset{Family: h.Family, Ypb: ypb, Samples: make([]Sample, 0, min(h.Samples, 1<<20))}
	var table []gbd.Cut // the previous sample's cuts, grown in place by the samples that continue it
	for i := 0; i < h.Samples; i++ {
		var rec sampleRecord
		if err := dec.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("truncated: %d samples, header says %d", i, h.Samples)
			}
			return nil, fmt.Errorf("sample %d: %w", i, streamErr(err))
		}
		s := Sample{Set: rec.Set, Label: rec.Label, Prev: rec.Prev}
		if rec.Y != "" {
			if s.Y, err = parseBits(rec.Y); err != nil {
				return nil, fmt.Errorf("sample %d: %w", i, err)
			}
		}
		if from := rec.CutsFrom; from == 0 {
			table = nil
		} else if cont, ok := telemetry.ChainHead(table, from); !ok || h.V < 2 || i == 0 || ds.Samples[i-1].Set != rec.Set {
			return nil, fmt.Errorf("sample %d: cuts_from %d does not continue the previous sample (of the same set, with %d cuts)", i, from, len(table))
		} else {
			table = cont
		}
		for k := range rec.Cuts {
			if _, err := gbd.ParseCutKind(rec.Cuts[k].Kind); err != nil {
				return nil, fmt.Errorf("sample %d: cut %d: %w", i, rec.CutsFrom+k, err)
			}
			table = append(table, rec.Cuts[k].Cut())
		}
		s.Cuts = slices.Clip(table)
		if s.Cuts == nil {
			s.Cuts = []gbd.Cut{}
		}
		if err := checkSample(&s, ypb); err != nil {
			return nil, fmt.Errorf("sample %d: %w", i, err)
		}
		ds.Samples = append(ds.Samples, s)
	}
	// Reading to the end makes gzip verify its CRC and length, and catches trailing records.
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err == nil:
		return nil, fmt.Errorf("more samples than the header's %d", h.Samples)
	default:
		return nil, fmt.Errorf("after sample %d: %w", h.Samples, streamErr(err))
	}
	return ds, nil
}

// streamErr names the two ways a damaged gzip stream shows up through the JSON decoder.
func streamErr(err error) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("truncated file: %w", err)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("corrupt file: %w", err)
	}
	return err
}

// bitString writes a 0/1 vector as "0101…" ("" for nil).
func bitString(y []uint8) string {
	b := make([]byte, len(y))
	for i, v := range y {
		b[i] = '0' + v
	}
	return string(b)
}

// parseBits reads bitString's form.
func parseBits(s string) ([]uint8, error) {
	y := make([]uint8, len(s))
	for i := range len(s) {
		if s[i] != '0' && s[i] != '1' {
			return nil, fmt.Errorf("assignment %q is not binary", s)
		}
		y[i] = s[i] - '0'
	}
	return y, nil
}

func ypbStrings(a *gbd.Admissible) []string {
	out := make([]string, a.Count())
	for j := range out {
		out[j] = bitString(a.At(j))
	}
	return out
}

// parseYpb rebuilds Y_pb from its stored rows and insists that it is the set the signature names.
func parseYpb(ny int, rows []string, sig string) (*gbd.Admissible, error) {
	if ny <= 0 || ny > 1024 {
		return nil, fmt.Errorf("number of binaries %d out of range", ny)
	}
	if len(rows) == 0 || len(rows) > gbd.DefaultMaxAdmissible {
		return nil, fmt.Errorf("admissible set has %d assignments", len(rows))
	}
	assign := make([]uint8, 0, len(rows)*ny)
	for j, r := range rows {
		if len(r) != ny {
			return nil, fmt.Errorf("admissible assignment %d is %q, want %d binaries", j, r, ny)
		}
		for i := 0; i < ny; i++ {
			if r[i] != '0' && r[i] != '1' {
				return nil, fmt.Errorf("admissible assignment %d is %q, not binary", j, r)
			}
			assign = append(assign, r[i]-'0')
		}
	}
	a, err := gbd.NewAdmissible(ny, assign)
	if err != nil {
		return nil, err
	}
	if a.Signature != sig {
		return nil, fmt.Errorf("admissible set signature %.12s… does not match its assignments (%.12s…)", sig, a.Signature)
	}
	return a, nil
}

// SplitBySample puts a random round(testFraction·#samples) samples into test and the rest into train,
// keeping their order. It separates master problems, not parameter sets, so test masters come from
// sets seen in training: the protocol splits by set (SplitBySet); this one exists to measure what a
// split by sample would report instead.
func SplitBySample(ds *Dataset, testFraction float64, seed uint64) (train, test *Dataset, err error) {
	if !(testFraction >= 0 && testFraction < 1) {
		return nil, nil, fmt.Errorf("split: test fraction %v outside [0,1)", testFraction)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed5a3e))
	nt := int(math.Round(testFraction * float64(len(ds.Samples))))
	inTest := make([]bool, len(ds.Samples))
	for _, i := range rng.Perm(len(ds.Samples))[:nt] {
		inTest[i] = true
	}
	train = &Dataset{Family: ds.Family, Ypb: ds.Ypb}
	test = &Dataset{Family: ds.Family, Ypb: ds.Ypb}
	for i, s := range ds.Samples {
		if inTest[i] {
			test.Samples = append(test.Samples, s)
		} else {
			train.Samples = append(train.Samples, s)
		}
	}
	return train, test, nil
}

// SplitBySet puts every sample of a randomly chosen round(testFraction·#sets) parameter sets (at least
// one when testFraction > 0 and there are two or more sets) into test and the rest into train, keeping
// the samples' order. Splitting by set rather than by sample keeps master problems of one GBD run, which
// share most of their cuts, from appearing on both sides.
func SplitBySet(ds *Dataset, testFraction float64, seed uint64) (train, test *Dataset, err error) {
	if !(testFraction >= 0 && testFraction < 1) {
		return nil, nil, fmt.Errorf("split: test fraction %v outside [0,1)", testFraction)
	}
	var sets []int
	seen := map[int]bool{}
	for i := range ds.Samples {
		if s := ds.Samples[i].Set; !seen[s] {
			seen[s] = true
			sets = append(sets, s)
		}
	}
	slices.Sort(sets)
	rng := rand.New(rand.NewPCG(seed, 0x5eed5e75))
	rng.Shuffle(len(sets), func(i, j int) { sets[i], sets[j] = sets[j], sets[i] })
	nt := int(math.Round(testFraction * float64(len(sets))))
	if nt == 0 && testFraction > 0 && len(sets) > 1 {
		nt = 1
	}
	inTest := map[int]bool{}
	for _, s := range sets[:nt] {
		inTest[s] = true
	}
	train = &Dataset{Family: ds.Family, Ypb: ds.Ypb}
	test = &Dataset{Family: ds.Family, Ypb: ds.Ypb}
	for _, s := range ds.Samples {
		if inTest[s.Set] {
			test.Samples = append(test.Samples, s)
		} else {
			train.Samples = append(train.Samples, s)
		}
	}
	return train, test, nil
}
