package policy

import (
	"math"

	"gonum.org/v1/gonum/blas"

	"gbdmpc/gbd"
)

// crossEntropy is the stage-1 loss L_CE^(1) = −log p_{j*} with p = softmax(ℓ), computed through a
// shifted log-sum-exp so that large logits cannot overflow. It writes ∂L/∂ℓ = p − onehot(j*) into d.
func crossEntropy(logits []float64, label int, d []float64) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, v)
	}
	var s float64
	for i, v := range logits {
		d[i] = math.Exp(v - m)
		s += d[i]
	}
	for i := range logits {
		d[i] /= s
	}
	d[label]--
	return m + math.Log(s) - logits[label]
}

// feasibilityCE is the stage-2 loss L_CE^(2) = −log p̃_{j*} on the adjusted logits ℓ̃ = ℓ − ω·s, where
// s_j is the infeasibility score of assignment j; it leaves ℓ̃ in adj. Because the shift does not depend
// on the parameters, ∂L/∂ℓ = ∂L/∂ℓ̃ = p̃ − onehot(j*).
func feasibilityCE(logits, s []float64, omega float64, label int, d, adj []float64) float64 {
	adjustLogits(adj, logits, s, omega)
	return crossEntropy(adj, label, d)
}

// adjustLogits writes ℓ̃ = ℓ − ω·s into dst.
func adjustLogits(dst, logits, s []float64, omega float64) {
	for i, v := range logits {
		dst[i] = v - omega*s[i]
	}
}

// binaryCE is the independent-IL loss: the mean over binaries of the binary cross-entropy between
// σ(z_i) and the expert's bit y_i, in the form max(z,0) − z·y + log(1+e^−|z|) that is stable for any z.
// It writes ∂L/∂z = (σ(z) − y)/NY into d.
func binaryCE(z []float64, bits []uint8, d []float64) float64 {
	var l float64
	inv := 1 / float64(len(z))
	for i, v := range z {
		y := float64(bits[i])
		l += max(v, 0) - v*y + math.Log1p(math.Exp(-math.Abs(v)))
		d[i] = (sigmoid(v) - y) * inv
	}
	return l * inv
}

// feasibilityBCE is the structured agent's stage-2 loss: binaryCE plus ω times the feasibility
// cuts' hinge at the probabilities p = σ(z), each cut scaled by its gradient's length so that cuts of
// any unit weigh alike: L = BCE + ω Σ_{k∈K_F} max(0, φ_f^(k)(p)) / ‖a_k‖₂ (a_k the cut's
// coefficients). It is the per-binary counterpart of the proposed agent's stage 2, which lowers
// the logits of assignments that violate the cuts: here the penalty pushes the expected assignment
// back inside them. It writes ∂L/∂z into d and the probabilities into p.
func feasibilityBCE(z []float64, bits []uint8, cuts []gbd.Cut, omega float64, d, p []float64) float64 {
	l := binaryCE(z, bits, d)
	for i, v := range z {
		p[i] = sigmoid(v)
	}
	for k := range cuts {
		c := &cuts[k]
		if c.Kind != gbd.FeasibilityCut {
			continue
		}
		norm := 0.0
		for _, a := range c.Coef {
			norm += a * a
		}
		if norm == 0 {
			continue
		}
		norm = math.Sqrt(norm)
		phi := c.Eval(p)
		if phi <= 0 {
			continue
		}
		l += omega * phi / norm
		for i, a := range c.Coef {
			d[i] += omega * a / norm * p[i] * (1 - p[i])
		}
	}
	return l
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// infeasibility computes s_j = Σ_{k∈K_F} max(0, φ_f^(k)(c^(j))) for every assignment c^(j) of Y_pb.
// ymat is Y_pb as a dense |Y_pb| × NY matrix; the feasibility cuts' coefficients are gathered as the
// columns of F (NY × |K_F|) so that all cut values come from one product Y_pb·F, plus the constants,
// then the hinge and the row sum. f and v are scratch, grown as needed and returned for reuse.
func infeasibility(cuts []gbd.Cut, ymat []float64, ny int, s, f, v []float64) (fOut, vOut []float64) {
	np := len(s)
	nf := 0
	for i := range cuts {
		if cuts[i].Kind == gbd.FeasibilityCut {
			nf++
		}
	}
	clear(s)
	if nf == 0 {
		return f, v
	}
	f = grow(f, ny*nf)
	v = grow(v, np*nf)
	k := 0
	for i := range cuts {
		c := &cuts[i]
		if c.Kind != gbd.FeasibilityCut {
			continue
		}
		for r, a := range c.Coef {
			f[r*nf+k] = a
		}
		for j := 0; j < np; j++ {
			v[j*nf+k] = c.Const
		}
		k++
	}
	impl.Dgemm(blas.NoTrans, blas.NoTrans, np, nf, ny, 1, ymat, ny, f, nf, 1, v, nf)
	for j := 0; j < np; j++ {
		for _, x := range v[j*nf : (j+1)*nf] {
			s[j] += max(x, 0)
		}
	}
	return f, v
}

// ypbMatrix lays Y_pb out as a dense |Y_pb| × NY matrix of 0/1 floats.
func ypbMatrix(a *gbd.Admissible) []float64 {
	return gbd.Floats(make([]float64, len(a.Assign)), a.Assign)
}
