package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gbdmpc/gbd"
)

// TestInferenceModes pins what a proposed agent proposes either way: its network's outputs (raw,
// the default and the paper's Algorithm 2) or ℓ − ω·s (adjusted), and that the mode travels in the
// policy file and changes the Version.
func TestInferenceModes(t *testing.T) {
	ypb := synthesisYpb(t)
	rng := rand.New(rand.NewPCG(60, 1))
	cuts, prev := randomMaster(rng, ypb.NY, 9)
	view := &gbd.MasterView{Cuts: cuts, Prev: prev, Ypb: ypb}
	raw := tinyAgent(t, Proposed)
	if raw.Inference() != Raw {
		t.Fatalf("a newly trained proposed agent infers %q, want raw", raw.Inference())
	}
	adj, err := raw.withInference(Adjusted)
	if err != nil {
		t.Fatal(err)
	}
	if adj.Version() == raw.Version() {
		t.Error("raw and adjusted agents share a Version though their outputs differ")
	}
	out := append([]float64(nil), raw.rawOutputs(view)...)
	s := make([]float64, ypb.Count())
	infeasibility(cuts, ypbMatrix(ypb), ypb.NY, s, nil, nil)
	pr, _ := raw.Propose(view)
	pa, _ := adj.Propose(view)
	shifted := false
	for j := range out {
		if pr.Logits[j] != out[j] {
			t.Fatalf("raw logit %d = %v, network output %v", j, pr.Logits[j], out[j])
		}
		if want := out[j] - raw.Omega()*s[j]; math.Abs(pa.Logits[j]-want) > 1e-12 {
			t.Fatalf("adjusted logit %d = %v, want ℓ − ω·s = %v", j, pa.Logits[j], want)
		}
		shifted = shifted || s[j] > 0
	}
	if !shifted {
		t.Fatal("the test master has no infeasible assignment: nothing checks the adjustment")
	}
	for _, a := range []*Agent{raw, adj} {
		var buf bytes.Buffer
		if err := a.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		b, err := Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", a.Inference(), err)
		}
		if b.Inference() != a.Inference() || b.Version() != a.Version() {
			t.Errorf("%s: loaded as %s %s, saved %s", a.Inference(), b.Inference(), b.Version(), a.Version())
		}
	}
	if _, err := tinyAgent(t, Baseline).withInference(Adjusted); err == nil {
		t.Error("a baseline agent accepted adjusted inference")
	}
	if _, err := raw.withInference("soft"); err == nil {
		t.Error("an unknown inference was accepted")
	}
}

// TestLegacyPolicyInfersAdjusted: a proposed policy file from before the inference field existed
// inferred ℓ − ω·s; it loads, with its stored Version, and keeps doing so. A raw file stripped of
// the field cannot pass for one: its Version no longer matches.
func TestLegacyPolicyInfersAdjusted(t *testing.T) {
	raw := tinyAgent(t, Proposed)
	adj, _ := raw.withInference(Adjusted)
	strip := func(a *Agent) []byte {
		var buf bytes.Buffer
		if err := a.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		h, p := splitPolicy(t, buf.Bytes())
		if _, ok := p["inference"]; !ok {
			t.Fatal("a proposed policy file has no inference field")
		}
		delete(p, "inference")
		body, _ := json.Marshal(p)
		return joinPolicy(t, h, body, true)
	}
	b, err := Decode(bytes.NewReader(strip(adj)))
	if err != nil {
		t.Fatalf("legacy file: %v", err)
	}
	if b.Inference() != Adjusted || b.Version() != adj.Version() {
		t.Errorf("legacy file loaded as %s %s, want adjusted %s", b.Inference(), b.Version(), adj.Version())
	}
	if _, err := Decode(bytes.NewReader(strip(raw))); err == nil || !strings.Contains(err.Error(), "does not match its contents") {
		t.Errorf("raw file without its inference field: %v", err)
	}
}
