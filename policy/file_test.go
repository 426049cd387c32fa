package policy

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gbdmpc/gbd"
)

// tinyAgent trains a small network for one epoch: enough to give every weight a trained value.
func tinyAgent(t testing.TB, variant Variant) *Agent {
	t.Helper()
	ds := synthTask(rand.New(rand.NewPCG(50, 1)), synthesisYpb(t), 3, 4)
	a, err := Train(context.Background(), ds, TrainConfig{Variant: variant, Arch: Arch{ECC: []int{3, 2}, Dense: []int{4}},
		Stage1: StageConfig{Epochs: 1}, Stage2: StageConfig{Epochs: 1}, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPolicyRoundTrip(t *testing.T) {
	ypb := synthesisYpb(t)
	cuts, prev := randomMaster(rand.New(rand.NewPCG(51, 1)), 5, 7)
	view := &gbd.MasterView{Cuts: cuts, Prev: prev, Ypb: ypb}
	for _, variant := range []Variant{Proposed, Baseline, Independent} {
		a := tinyAgent(t, variant)
		a.SetHeldOut(Metrics{Samples: 10, ExactMatch: 7, ExactMatchPct: 70})
		path := filepath.Join(t.TempDir(), "policy.json.gz")
		if err := a.Save(path); err != nil {
			t.Fatal(err)
		}
		b, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", variant, err)
		}
		if b.Version() != a.Version() || b.Variant() != variant || b.Family() != "synthetic" || b.Omega() != a.Omega() ||
			b.Ypb().Signature != ypb.Signature {
			t.Errorf("%s: loaded %s %s %s ω=%v", variant, b.Version(), b.Variant(), b.Family(), b.Omega())
		}
		if fmt.Sprint(b.Meta()) != fmt.Sprint(a.Meta()) || b.Meta().HeldOut.ExactMatch != 7 || b.Meta().Date != "2026-01-02T03:04:05Z" {
			t.Errorf("%s: metadata %+v, want %+v", variant, b.Meta(), a.Meta())
		}
		if fmt.Sprint(b.Arch()) != fmt.Sprint(a.Arch()) {
			t.Errorf("%s: arch %+v, want %+v", variant, b.Arch(), a.Arch())
		}
		for i := range a.net.p {
			if math.Float64bits(a.net.p[i]) != math.Float64bits(b.net.p[i]) {
				t.Fatalf("%s: weight %d changed: %v → %v", variant, i, a.net.p[i], b.net.p[i])
			}
		}
		pa, _ := a.Propose(view)
		pb, _ := b.Propose(view)
		if fmt.Sprint(pa) != fmt.Sprint(pb) {
			t.Errorf("%s: outputs differ after loading", variant)
		}
		if err := b.CheckFits("synthetic", ypb); err != nil {
			t.Error(err)
		}
	}
}

// splitPolicy undoes the gzip and header of a policy file.
func splitPolicy(t *testing.T, data []byte) (map[string]any, map[string]any) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	nl := bytes.IndexByte(raw, '\n')
	var h, p map[string]any
	if err := json.Unmarshal(raw[:nl], &h); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw[nl+1:], &p); err != nil {
		t.Fatal(err)
	}
	return h, p
}

// joinPolicy writes a header and payload back; with reseal the header's length and checksum are
// recomputed so that only the edit under test is wrong.
func joinPolicy(t *testing.T, h map[string]any, body []byte, reseal bool) []byte {
	t.Helper()
	if reseal {
		sum := sha256.Sum256(body)
		h["sha256"] = hex.EncodeToString(sum[:])
		h["payload_bytes"] = len(body)
	}
	hb, _ := json.Marshal(h)
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(hb)
	zw.Write([]byte{'\n'})
	zw.Write(body)
	zw.Close()
	return b.Bytes()
}

func TestPolicyRejects(t *testing.T) {
	a := tinyAgent(t, Proposed)
	var buf bytes.Buffer
	if err := a.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	valid := buf.Bytes()
	edit := func(reseal bool, f func(h, p map[string]any)) []byte {
		h, p := splitPolicy(t, valid)
		f(h, p)
		body, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return joinPolicy(t, h, body, reseal)
	}
	param := func(p map[string]any, i int) map[string]any { return p["params"].([]any)[i].(map[string]any) }
	rawEdit := func(old, new string) []byte {
		h, p := splitPolicy(t, valid)
		body, _ := json.Marshal(p)
		s := strings.Replace(string(body), old, new, 1)
		if s == string(body) {
			t.Fatalf("%q not in payload", old)
		}
		return joinPolicy(t, h, []byte(s), true)
	}
	firstWeight := fmt.Sprint(param(mustMap(splitPolicy(t, valid)), 0)["data"].([]any)[0])

	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"sanity", valid, ""},
		{"resealed unchanged", edit(true, func(h, p map[string]any) {}), ""},
		{"empty", nil, "not a policy file"},
		{"not gzip", []byte(`{"format":"gbdmpc-policy"}`), "not a policy file"},
		{"truncated", valid[:len(valid)*2/3], "truncated file"},
		{"corrupt byte", flip(valid, len(valid)/2), ""},
		{"checksum", edit(false, func(h, p map[string]any) { p["family"] = "synthetiC" }), "checksum mismatch"},
		{"payload length", edit(false, func(h, p map[string]any) { p["family"] = "synth" }), "payload is"},
		{"format", edit(true, func(h, p map[string]any) { h["format"] = "onnx" }), `format "onnx"`},
		{"version", edit(true, func(h, p map[string]any) { h["v"] = 2 }), "unsupported policy format version 2"},
		{"variant", edit(true, func(h, p map[string]any) { p["variant"] = "greedy" }), `unknown variant "greedy"`},
		{"shape", edit(true, func(h, p map[string]any) { param(p, 2)["rows"] = 4.0 }), `weight tensor 2 is "ecc1.W" 4×`},
		{"length", edit(true, func(h, p map[string]any) {
			d := param(p, 0)["data"].([]any)
			param(p, 0)["data"] = d[:len(d)-1]
		}), `weight tensor 0 is "ecc0.W"`},
		{"missing tensor", edit(true, func(h, p map[string]any) { p["params"] = p["params"].([]any)[1:] }), "weight tensors, the architecture has"},
		{"arch", edit(true, func(h, p map[string]any) { p["arch"].(map[string]any)["ecc"] = []int{3, 3} }), "weight tensor"},
		{"outputs", edit(true, func(h, p map[string]any) { p["arch"].(map[string]any)["outputs"] = 5 }), "says 5 outputs"},
		{"encoding", edit(true, func(h, p map[string]any) { p["arch"].(map[string]any)["node_features"] = 3 }), "graph encoding has 3 node"},
		{"Y_pb signature", edit(true, func(h, p map[string]any) { p["ypb_signature"] = strings.Repeat("ab", 32) }), "signature"},
		{"Y_pb order", edit(true, func(h, p map[string]any) {
			y := p["ypb"].([]any)
			y[0], y[1] = y[1], y[0]
		}), "out of order"},
		{"omega", edit(true, func(h, p map[string]any) { p["omega"] = 0.0 }), "ω = 0 is not valid for a proposed agent"},
		{"norm", edit(true, func(h, p map[string]any) { p["norm"].(map[string]any)["rhs_std"] = []float64{0, 1} }), "normalisation"},
		{"weight changed", edit(true, func(h, p map[string]any) { param(p, 1)["data"].([]any)[0] = 0.5 }), "does not match its contents"},
		{"NaN weight", rawEdit(`"data":[`+firstWeight, `"data":[NaN`), "payload: invalid character 'N'"},
		{"Inf weight", rawEdit(`"data":[`+firstWeight, `"data":[1e999`), "cannot unmarshal number 1e999"},
		{"unknown field", edit(true, func(h, p map[string]any) { p["dropout"] = 0.5 }), `unknown field "dropout"`},
	} {
		_, err := Decode(bytes.NewReader(tc.data))
		switch {
		case tc.name == "corrupt byte":
			if err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func mustMap(h, p map[string]any) map[string]any { return p }

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x40
	return c
}

func TestSaveAtomic(t *testing.T) {
	a := tinyAgent(t, Baseline)
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json.gz")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after Save, want only the policy", len(entries))
	}
	if _, err := Load(path); err != nil {
		t.Error(err)
	}
	if err := a.Save(filepath.Join(dir, "missing", "p.json.gz")); err == nil {
		t.Error("saving into a missing directory succeeded")
	}
	if _, err := Load(filepath.Join(dir, "nope")); err == nil {
		t.Error("loading a missing file succeeded")
	}
	a.net.p[3] = math.Inf(1)
	if err := a.Save(path); err == nil || !strings.Contains(err.Error(), "weight 3 is +Inf") {
		t.Errorf("saving a diverged network: %v", err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("a failed Save damaged the previous file: %v", err)
	}
}

// FuzzLoad feeds arbitrary bytes to the policy decoder: it must return an agent or an error, never
// panic, and an agent it returns must be usable.
func FuzzLoad(f *testing.F) {
	var buf bytes.Buffer
	if err := tinyAgent(f, Proposed).Encode(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	ypb := synthesisYpb(f)
	cuts, prev := randomMaster(rand.New(rand.NewPCG(52, 1)), 5, 4)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecoded(t, bytes.NewReader(data), &gbd.MasterView{Cuts: cuts, Prev: prev, Ypb: ypb})
	})
}

// checkDecoded decodes a policy file that may be broken: an error is fine, and an agent it does
// decode over v's Y_pb must answer v.
func checkDecoded(t *testing.T, r io.Reader, v *gbd.MasterView) {
	a, err := Decode(r)
	if err != nil {
		return
	}
	if a.Ypb().Signature == v.Ypb.Signature {
		if _, err := a.Propose(v); err != nil {
			t.Errorf("decoded agent rejects a valid view: %v", err)
		}
	}
}

// FuzzPayload seals arbitrary payload bytes with a correct header and checksum, so that the fuzzer
// reaches the payload's validation, which FuzzLoad's mutations rarely get past the checksum to.
func FuzzPayload(f *testing.F) {
	var buf bytes.Buffer
	if err := tinyAgent(f, Proposed).Encode(&buf); err != nil {
		f.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		f.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	f.Add(raw[bytes.IndexByte(raw, '\n')+1:])
	ypb := synthesisYpb(f)
	cuts, prev := randomMaster(rand.New(rand.NewPCG(53, 1)), 5, 4)
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha256.Sum256(body)
		var b bytes.Buffer
		// Stored (uncompressed) deflate blocks: compressing every input makes instrumented fuzzing crawl.
		zw, _ := gzip.NewWriterLevel(&b, gzip.NoCompression)
		fmt.Fprintf(zw, `{"format":"gbdmpc-policy","v":1,"payload_bytes":%d,"sha256":"%x"}`+"\n", len(body), sum)
		zw.Write(body)
		zw.Close()
		checkDecoded(t, &b, &gbd.MasterView{Cuts: cuts, Prev: prev, Ypb: ypb})
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzLoad when POLICY_WRITE_FUZZ_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("POLICY_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set POLICY_WRITE_FUZZ_SEEDS=1 to regenerate the fuzz seeds")
	}
	var buf bytes.Buffer
	if err := tinyAgent(t, Proposed).Encode(&buf); err != nil {
		t.Fatal(err)
	}
	valid := bytes.Clone(buf.Bytes())
	buf.Reset()
	if err := tinyAgent(t, Independent).Encode(&buf); err != nil {
		t.Fatal(err)
	}
	h, p := splitPolicy(t, valid)
	body, _ := json.Marshal(p)
	hb, _ := json.Marshal(h)
	seeds := map[string][]byte{
		"valid-proposed":    valid,
		"valid-independent": buf.Bytes(),
		"truncated":         valid[:len(valid)/2],
		"uncompressed":      append(append(hb, '\n'), body...),
		"bad-checksum":      joinPolicy(t, h, bytes.Replace(body, []byte("synthetic"), []byte("synthetiC"), 1), false),
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzLoad")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range seeds {
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
