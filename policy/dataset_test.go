package policy

import (
	"bytes"
	"compress/gzip"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func smallDataset(t testing.TB) *Dataset {
	ds := synthTask(rand.New(rand.NewPCG(40, 1)), synthesisYpb(t), 5, 4)
	ds.Samples[0].Cuts[0].Carried = true
	ds.Samples[0].Cuts[0].Iter = -1
	return ds
}

func TestDatasetRoundTrip(t *testing.T) {
	ds := smallDataset(t)
	path := filepath.Join(t.TempDir(), "train.jsonl.gz")
	if err := SaveDataset(path, ds); err != nil {
		t.Fatal(err)
	}
	got, err := LoadDataset(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Family != ds.Family || got.Ypb.Signature != ds.Ypb.Signature || !bytes.Equal(got.Ypb.Assign, ds.Ypb.Assign) {
		t.Errorf("header: got %s %s", got.Family, got.Ypb.Signature)
	}
	if !reflect.DeepEqual(got.Samples, ds.Samples) {
		t.Error("samples differ after a round trip")
	}
}

// The masters of one GBD run share all but their newest cuts: the file stores each cut once, and
// the samples read back are the same and share them.
func TestDatasetContinuesARun(t *testing.T) {
	ds := smallDataset(t)
	rng := rand.New(rand.NewPCG(41, 1))
	var grown []Sample
	for set := range 3 {
		base := ds.Samples[set]
		for k := range 30 {
			s := base
			s.Set = set
			s.Cuts = nil
			for j := range k + 1 {
				c := base.Cuts[0]
				c.Coef = append([]float64(nil), c.Coef...)
				c.Coef[0], c.Iter, c.Carried = float64(set*100+j), j, false
				s.Cuts = append(s.Cuts, c)
			}
			if k == 20 {
				s.Cuts[3].Const = rng.Float64() // a run that does not continue the last
			}
			grown = append(grown, s)
		}
	}
	ds.Samples = grown
	dir := t.TempDir()
	chained, whole := filepath.Join(dir, "chained.jsonl.gz"), filepath.Join(dir, "whole.jsonl.gz")
	if err := SaveDataset(chained, ds); err != nil {
		t.Fatal(err)
	}
	got, err := LoadDataset(chained)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got.Samples {
		if !reflect.DeepEqual(got.Samples[i], ds.Samples[i]) {
			t.Fatalf("sample %d differs after a round trip:\n got %+v\nwant %+v", i, got.Samples[i], ds.Samples[i])
		}
	}
	for i := range got.Samples {
		if c := got.Samples[i].Cuts; cap(c) != len(c) {
			t.Fatalf("sample %d's cuts have room to grow into the next sample's", i)
		}
	}
	// The same samples, no two of a set in a row, are all written whole.
	apart := &Dataset{Family: ds.Family, Ypb: ds.Ypb}
	for k := range 30 {
		for set := range 3 {
			apart.Samples = append(apart.Samples, grown[set*30+k])
		}
	}
	if err := SaveDataset(whole, apart); err != nil {
		t.Fatal(err)
	}
	raw := func(path string) int {
		f, _ := os.Open(path)
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for buf := make([]byte, 1<<16); ; {
			m, err := zr.Read(buf)
			n += m
			if err != nil {
				return n
			}
		}
	}
	if a, b := raw(chained), raw(whole); 4*a > b {
		t.Errorf("%d bytes with runs continued, %d whole: want under a quarter", a, b)
	}
}

// gzipLines writes lines as a gzip'd file and returns its path.
func gzipLines(t *testing.T, lines ...string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
	zw.Close()
	path := filepath.Join(t.TempDir(), "ds.jsonl.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDatasetRejects(t *testing.T) {
	ypb := synthesisYpb(t)
	hdr := func(v, n int, sig string) string {
		return `{"format":"gbdmpc-dataset","v":` + strconv.Itoa(v) + `,"family":"synthesis","ny":5,"ypb":["` +
			strings.Join(ypbStrings(ypb), `","`) + `"],"signature":"` + sig + `","samples":` + strconv.Itoa(n) + `}`
	}
	good := hdr(1, 1, ypb.Signature)
	sample := func(label, coef string) string {
		return `{"set":1,"label":` + label + `,"prev":[0,1,0,0,1],"cuts":[{"kind":"optimality","coef":` + coef + `,"const":3,"iter":0}]}`
	}
	ok := sample("2", "[1,2,3,4,5]")

	valid := filepath.Join(t.TempDir(), "valid.jsonl.gz")
	if err := SaveDataset(valid, smallDataset(t)); err != nil {
		t.Fatal(err)
	}
	whole, _ := os.ReadFile(valid)
	truncated := filepath.Join(t.TempDir(), "trunc.jsonl.gz")
	os.WriteFile(truncated, whole[:len(whole)/2], 0o644)
	notGzip := filepath.Join(t.TempDir(), "plain.jsonl")
	os.WriteFile(notGzip, []byte(good+"\n"+ok+"\n"), 0o644)

	for _, tc := range []struct {
		name, path, want string
	}{
		{"sanity", gzipLines(t, good, ok), ""},
		{"truncated gzip", truncated, "truncated file"},
		{"not gzip", notGzip, "not a gzip stream"},
		{"version", gzipLines(t, hdr(3, 1, ypb.Signature), ok), "unsupported version 3"},
		{"version 1", gzipLines(t, hdr(1, 1, ypb.Signature), ok), ""},
		{"continues nothing", gzipLines(t, hdr(2, 1, ypb.Signature), strings.Replace(ok, `"cuts":`, `"cuts_from":1,"cuts":`, 1)), "cuts_from 1 does not continue"},
		{"continues another set", gzipLines(t, hdr(2, 2, ypb.Signature), ok, strings.Replace(strings.Replace(ok, `"set":1`, `"set":2`, 1), `"cuts":`, `"cuts_from":1,"cuts":`, 1)), "cuts_from 1 does not continue"},
		{"continues too far", gzipLines(t, hdr(2, 2, ypb.Signature), ok, strings.Replace(ok, `"cuts":`, `"cuts_from":2,"cuts":`, 1)), "cuts_from 2 does not continue"},
		{"continues in version 1", gzipLines(t, hdr(1, 2, ypb.Signature), ok, strings.Replace(ok, `"cuts":`, `"cuts_from":1,"cuts":`, 1)), "cuts_from 1 does not continue"},
		{"continues", gzipLines(t, hdr(2, 2, ypb.Signature), ok, strings.Replace(ok, `"cuts":`, `"cuts_from":1,"cuts":`, 1)), ""},
		{"signature", gzipLines(t, hdr(1, 1, strings.Repeat("0", 64)), ok), "signature"},
		{"too few samples", gzipLines(t, hdr(1, 2, ypb.Signature), ok), "truncated: 1 samples, header says 2"},
		{"too many samples", gzipLines(t, good, ok, ok), "more samples than the header's 1"},
		{"label", gzipLines(t, good, sample("12", "[1,2,3,4,5]")), "label 12 out of range [0,12)"},
		{"coef length", gzipLines(t, good, sample("2", "[1,2,3,4]")), "cut 0: 4 coefficients, want 5"},
		{"NaN", gzipLines(t, good, sample("2", "[1,NaN,3,4,5]")), "sample 0: invalid character 'N'"},
		{"Inf", gzipLines(t, good, sample("2", "[1,1e999,3,4,5]")), "sample 0: json: cannot unmarshal number 1e999"},
		{"kind", gzipLines(t, good, strings.Replace(ok, "optimality", "benders", 1)), `unknown cut kind "benders"`},
		{"unknown field", gzipLines(t, good, strings.Replace(ok, `"set"`, `"sett"`, 1)), `unknown field "sett"`},
	} {
		_, err := LoadDataset(tc.path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}

	ds := smallDataset(t)
	ds.Samples[1].Cuts[0].Coef[2] = math.NaN()
	if err := SaveDataset(filepath.Join(t.TempDir(), "x"), ds); err == nil || !strings.Contains(err.Error(), "sample 1: cut 0: coefficient 2 is NaN") {
		t.Errorf("saving NaN: %v", err)
	}
}

func TestSplitBySet(t *testing.T) {
	ds := synthTask(rand.New(rand.NewPCG(41, 1)), synthesisYpb(t), 20, 5)
	train, test, err := SplitBySet(ds, 0.25, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(train.Samples)+len(test.Samples) != len(ds.Samples) {
		t.Fatalf("%d + %d samples, want %d", len(train.Samples), len(test.Samples), len(ds.Samples))
	}
	trainSets := map[int]bool{}
	for _, s := range train.Samples {
		trainSets[s.Set] = true
	}
	testSets := map[int]bool{}
	for _, s := range test.Samples {
		if trainSets[s.Set] {
			t.Fatalf("set %d on both sides", s.Set)
		}
		testSets[s.Set] = true
	}
	if len(testSets) != 5 {
		t.Errorf("%d test sets, want 5 of 20", len(testSets))
	}
	_, again, _ := SplitBySet(ds, 0.25, 9)
	if !reflect.DeepEqual(again.Samples, test.Samples) {
		t.Error("same seed, different split")
	}
	_, other, _ := SplitBySet(ds, 0.25, 10)
	if reflect.DeepEqual(other.Samples, test.Samples) {
		t.Error("another seed gave the same split")
	}
	if _, _, err := SplitBySet(ds, 1, 0); err == nil {
		t.Error("test fraction 1 accepted")
	}
	_, small, _ := SplitBySet(ds, 0.01, 0)
	if countSets(small.Samples) != 1 {
		t.Errorf("a small positive fraction should still hold out one set, got %d", countSets(small.Samples))
	}
}

func TestSplitBySample(t *testing.T) {
	ds := synthTask(rand.New(rand.NewPCG(42, 1)), synthesisYpb(t), 10, 20)
	train, test, err := SplitBySample(ds, 0.1, 3)
	if err != nil {
		t.Fatal(err)
	}
	n := len(ds.Samples)
	if nt := int(math.Round(0.1 * float64(n))); len(test.Samples) != nt || len(train.Samples) != n-nt {
		t.Fatalf("%d train / %d test samples of %d, want %d test", len(train.Samples), len(test.Samples), n, nt)
	}
	if _, again, _ := SplitBySample(ds, 0.1, 3); !reflect.DeepEqual(again.Samples, test.Samples) {
		t.Error("same seed, different split")
	}
	if _, _, err := SplitBySample(ds, 1, 3); err == nil {
		t.Error("test fraction 1 accepted")
	}
}
