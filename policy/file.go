package policy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gbdmpc/gbd"
	"gbdmpc/gbd/agent"
)

// Policy file: a gzip stream holding one header line and a JSON payload.
//
//	{"format":"gbdmpc-policy","v":1,"payload_bytes":N,"sha256":"<hex of the N payload bytes>"}\n
//	<N bytes of payload JSON>
//
// The checksum covers the payload's exact bytes, so it is verified before anything in the payload is
// trusted, and it catches edits that a re-compressed (hence CRC-valid) gzip stream would hide.
const (
	policyFormat  = "gbdmpc-policy"
	policyVersion = 1
	// maxPolicyBytes bounds the decompressed size read, so a corrupt or hostile file cannot exhaust
	// memory. The paper's network is about 0.6 MB of JSON.
	maxPolicyBytes = 512 << 20
)

type policyHeader struct {
	Format       string `json:"format"`
	V            int    `json:"v"`
	PayloadBytes int64  `json:"payload_bytes"`
	SHA256       string `json:"sha256"`
}

type policyPayload struct {
	Variant Variant `json:"variant"`
	Version string  `json:"version"`
	Family  string  `json:"family"`
	NY      int     `json:"ny"`
	ypbRecord
	Signature string     `json:"ypb_signature"`
	Arch      archRecord `json:"arch"`
	Omega     float64    `json:"omega"` // ω of stage 2 (proposed only)
	// Inference is how a proposed agent proposes: "raw" or "adjusted" (ℓ − ω·s). Files written
	// before the field existed have none and inferred adjusted, so a missing one means adjusted for
	// a proposed agent; the other variants always propose their raw outputs and write none.
	Inference Inference     `json:"inference,omitempty"`
	Norm      Norm          `json:"norm"`
	Params    []paramRecord `json:"params"`
	Train     TrainMeta     `json:"train"`
}

// archRecord states the encoding widths too, so a file from a build with a different graph encoding is
// refused instead of silently misread.
type archRecord struct {
	NodeFeatures int    `json:"node_features"`
	EdgeFeatures int    `json:"edge_features"`
	VarIndex     bool   `json:"var_index"`
	CutCoefs     bool   `json:"cut_coefs,omitempty"`
	CutAtPrev    bool   `json:"cut_at_prev,omitempty"` // absent in files from before it existed: off
	CutNorm      string `json:"cut_norm,omitempty"`    // absent in files from before it existed: CutNormKind
	Pool         string `json:"pool,omitempty"`        // absent in files from before it existed: PoolSum
	Aggr         string `json:"aggr,omitempty"`        // absent in files from before it existed: AggrSum
	Kernel       int    `json:"kernel,omitempty"`      // absent in files from before it existed: linear (0)
	PoolAll      bool   `json:"pool_all,omitempty"`    // absent in files from before it existed: last layer only
	PerNode      bool   `json:"per_node,omitempty"`    // absent in files from before it existed: the readout's head
	ECC          []int  `json:"ecc"`
	Dense        []int  `json:"dense"`
	Outputs      int    `json:"outputs"`
}

type paramRecord struct {
	Name string    `json:"name"`
	Rows int       `json:"rows"`
	Cols int       `json:"cols"`
	Data []float64 `json:"data"`
}

// Save writes the agent to path atomically: a temporary file in the same directory is written, synced
// and renamed over path, so a reader (or a crash) never sees half a policy.
func (a *Agent) Save(path string) error {
	if err := writeAtomic(path, a.Encode); err != nil {
		return fmt.Errorf("save policy %s: %w", path, err)
	}
	return nil
}

// Encode writes the policy file format to w.
func (a *Agent) Encode(w io.Writer) error {
	for i, v := range a.net.p {
		if !finite(v) {
			return fmt.Errorf("policy: weight %d is %v; refusing to write a diverged network", i, v)
		}
	}
	lay := a.net.lay
	p := policyPayload{
		Variant: a.variant, Version: a.version, Family: a.family,
		NY: a.ypb.NY, Signature: a.ypb.Signature,
		Arch: archRecord{NodeFeatures: lay.nf, EdgeFeatures: edgeFeatures, VarIndex: lay.arch.VarIndex, CutCoefs: lay.arch.CutCoefs, CutAtPrev: lay.arch.CutAtPrev, CutNorm: lay.arch.CutNorm, Pool: lay.arch.Pool, Aggr: lay.arch.Aggr, Kernel: lay.arch.Kernel, PoolAll: lay.arch.PoolAll, PerNode: lay.arch.PerNode,
			ECC: lay.arch.ECC, Dense: append([]int{}, lay.arch.Dense...), Outputs: lay.nout},
		Omega: a.omega, Norm: a.norm, Train: a.meta,
	}
	p.ypbRecord = ypbRecordOf(a.ypb)
	if a.variant == Proposed {
		p.Inference = a.infer
	}
	for _, t := range lay.all {
		p.Params = append(p.Params, paramRecord{Name: t.name, Rows: t.rows, Cols: t.cols, Data: lay.view(a.net.p, t)})
	}
	body, err := json.Marshal(&p)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	sum := sha256.Sum256(body)
	h, err := json.Marshal(policyHeader{Format: policyFormat, V: policyVersion, PayloadBytes: int64(len(body)), SHA256: hex.EncodeToString(sum[:])})
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	for _, b := range [][]byte{h, {'\n'}, body} {
		if _, err := zw.Write(b); err != nil {
			return err
		}
	}
	return zw.Close()
}

// Load reads and fully validates a policy file.
func Load(path string) (*Agent, error) { return load(path, "policy", Decode) }

// load opens path and decodes it, naming what and the path in the error.
func load[T any](path, what string, decode func(io.Reader) (*T, error)) (*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", what, err)
	}
	defer f.Close()
	v, err := decode(f)
	if err != nil {
		return nil, fmt.Errorf("load %s %s: %w", what, path, err)
	}
	return v, nil
}

// Decode reads the policy file format from r. It fails, naming the reason, on a damaged or truncated
// stream, a checksum mismatch, an unknown format version, an action space or architecture that does
// not match the weights, and non-finite numbers.
func Decode(r io.Reader) (*Agent, error) {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("not a policy file (gzip: %w)", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxPolicyBytes+1))
	if err != nil {
		return nil, streamErr(err)
	}
	if len(raw) > maxPolicyBytes {
		return nil, fmt.Errorf("policy larger than %d bytes", maxPolicyBytes)
	}
	nl := bytes.IndexByte(raw, '\n')
	if nl < 0 {
		return nil, errors.New("truncated policy: no header line")
	}
	var h policyHeader
	if err := json.Unmarshal(raw[:nl], &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if h.Format != policyFormat {
		return nil, fmt.Errorf("header: format %q, want %q", h.Format, policyFormat)
	}
	if h.V != policyVersion {
		return nil, fmt.Errorf("unsupported policy format version %d (this build reads version %d)", h.V, policyVersion)
	}
	body := raw[nl+1:]
	if int64(len(body)) != h.PayloadBytes {
		return nil, fmt.Errorf("truncated or padded policy: payload is %d bytes, header says %d", len(body), h.PayloadBytes)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != h.SHA256 {
		return nil, fmt.Errorf("policy checksum mismatch: payload hashes to %x, header says %.64s", sum[:], h.SHA256)
	}
	var p policyPayload
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return p.agent()
}

func (p *policyPayload) agent() (*Agent, error) {
	if !p.Variant.valid() {
		return nil, fmt.Errorf("unknown variant %q", p.Variant)
	}
	if p.Family == "" {
		return nil, errors.New("empty family")
	}
	ypb, err := p.read(p.NY, p.Signature)
	if err != nil {
		return nil, err
	}
	arch := Arch{ECC: p.Arch.ECC, Dense: p.Arch.Dense, VarIndex: p.Arch.VarIndex, CutCoefs: p.Arch.CutCoefs, CutAtPrev: p.Arch.CutAtPrev, CutNorm: p.Arch.CutNorm, Pool: p.Arch.Pool, Aggr: p.Arch.Aggr, Kernel: p.Arch.Kernel, PoolAll: p.Arch.PoolAll, PerNode: p.Arch.PerNode}
	if nf := nodeWidth(&arch, p.NY); p.Arch.NodeFeatures != nf || p.Arch.EdgeFeatures != edgeFeatures {
		return nil, fmt.Errorf("graph encoding has %d node / %d edge features, this build uses %d / %d",
			p.Arch.NodeFeatures, p.Arch.EdgeFeatures, nf, edgeFeatures)
	}
	if arch.Dense == nil {
		arch.Dense = []int{}
	}
	lay, err := agentLayout(p.Variant, arch, ypb)
	if err != nil {
		return nil, err
	}
	if p.Arch.Outputs != lay.nout {
		return nil, fmt.Errorf("architecture says %d outputs, a %s agent over this Y_pb has %d", p.Arch.Outputs, p.Variant, lay.nout)
	}
	if p.Variant == Proposed && !(p.Omega > 0 && finite(p.Omega)) || p.Variant != Proposed && p.Omega != 0 {
		return nil, fmt.Errorf("ω = %v is not valid for a %s agent", p.Omega, p.Variant)
	}
	infer := p.Inference
	switch {
	case infer == "" && p.Variant == Proposed:
		infer = Adjusted
	case infer == "":
		infer = Raw
	case !infer.valid():
		return nil, fmt.Errorf("unknown inference %q (want %q or %q)", infer, Raw, Adjusted)
	case p.Variant != Proposed:
		return nil, fmt.Errorf("a %s agent proposes its raw outputs; inference %q is for proposed agents", p.Variant, infer)
	}
	if !p.Norm.valid() {
		return nil, fmt.Errorf("normalisation statistics are not finite and positive: %+v", p.Norm)
	}
	if len(p.Params) != len(lay.all) {
		return nil, fmt.Errorf("%d weight tensors, the architecture has %d", len(p.Params), len(lay.all))
	}
	// Every shape is checked before the parameter vector is allocated, so its size is bounded by what
	// the file actually holds rather than by what its architecture claims.
	for i, t := range lay.all {
		r := &p.Params[i]
		if r.Name != t.name || r.Rows != t.rows || r.Cols != t.cols || len(r.Data) != t.size() {
			return nil, fmt.Errorf("weight tensor %d is %q %d×%d with %d values, want %q %d×%d",
				i, r.Name, r.Rows, r.Cols, len(r.Data), t.name, t.rows, t.cols)
		}
		for k, v := range r.Data {
			if !finite(v) {
				return nil, fmt.Errorf("weight tensor %q value %d is %v", t.name, k, v)
			}
		}
	}
	params := make([]float64, lay.size)
	for i, t := range lay.all {
		copy(lay.view(params, t), p.Params[i].Data)
	}
	a := &Agent{variant: p.Variant, family: p.Family, ypb: ypb, norm: p.Norm, omega: p.Omega, infer: infer, meta: p.Train, net: network{lay: lay, p: params}}
	a.init()
	if a.version != p.Version {
		return nil, fmt.Errorf("policy version %q does not match its contents (%q)", p.Version, a.version)
	}
	return a, nil
}

// modelHash fingerprints what determines the agent's outputs, in a fixed binary form independent of
// JSON formatting, so the same weights always give the same Version.
func (a *Agent) modelHash() string {
	h := sha256.New()
	str := func(s string) {
		binary.Write(h, binary.LittleEndian, uint64(len(s)))
		io.WriteString(h, s)
	}
	ints := func(v []int) {
		binary.Write(h, binary.LittleEndian, uint64(len(v)))
		for _, x := range v {
			binary.Write(h, binary.LittleEndian, int64(x))
		}
	}
	floats := func(v []float64) {
		var b [8]byte
		binary.Write(h, binary.LittleEndian, uint64(len(v)))
		for _, x := range v {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
			h.Write(b[:])
		}
	}
	lay := a.net.lay
	str(policyFormat + "/model/1")
	str(string(a.variant))
	str(a.family)
	str(a.ypb.Signature)
	ints([]int{lay.nf, edgeFeatures, lay.nout})
	ints(lay.arch.ECC)
	ints(lay.arch.Dense)
	nm := a.norm
	floats(append(append(append(nm.RHSMean[:], nm.RHSStd[:]...), nm.CoefMean[:]...), nm.CoefStd[:]...))
	floats([]float64{a.omega})
	floats(a.net.p)
	// A raw-inference proposed agent proposes other logits than the same weights adjusted. Only that
	// case is hashed, so the versions of files from before the choice (all adjusted) stay valid.
	if a.variant == Proposed && a.infer == Raw {
		str("inference/raw")
	}
	if lay.arch.CutNorm != CutNormKind {
		str("cut_norm/" + lay.arch.CutNorm)
	}
	if lay.arch.CutCoefs {
		str("cut_coefs")
	}
	if lay.arch.CutAtPrev {
		str("cut_at_prev")
	}
	if lay.arch.Pool != PoolSum {
		str("pool/" + lay.arch.Pool)
	}
	if lay.arch.Aggr != AggrSum {
		str("aggr/" + lay.arch.Aggr)
	}
	if lay.arch.Kernel != 0 {
		ints([]int{lay.arch.Kernel})
	}
	if lay.arch.PoolAll {
		str("pool_all")
	}
	if lay.arch.PerNode {
		str("per_node")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeAtomic writes path through a synced temporary file and a rename, then syncs the directory so
// the rename itself survives a crash.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Resolve turns a policy spec into a policy for a family's action space: "" is classical GBD
// (nil, ""), agent.BuiltinPrefix+NAME a built-in policy seeded with seed (its version is the
// spec), and anything else a policy file, which must fit the family and its Y_pb (CheckFits), so
// that a wrong file is refused before it is used. The daemon (at start and reload) and the
// commands resolve their --policy and policy keys here.
func Resolve(spec string, seed uint64, family string, ypb *gbd.Admissible) (gbd.Policy, string, error) {
	if spec == "" {
		return nil, "", nil
	}
	if name, ok := strings.CutPrefix(spec, agent.BuiltinPrefix); ok {
		p, err := agent.NewBuiltin(name, seed)
		if err != nil {
			return nil, "", err
		}
		return p, spec, nil
	}
	a, err := Load(spec)
	if err != nil {
		return nil, "", err
	}
	if err := a.CheckFits(family, ypb); err != nil {
		return nil, "", fmt.Errorf("policy %s: %w", spec, err)
	}
	return a, a.Version(), nil
}
