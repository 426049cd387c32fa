package telemetry

import (
	"encoding/json"
	"slices"

	"gbdmpc/gbd"
)

// MasterRecordOf is the logged form of one GBD master problem and the decisions taken on it: the
// one encoder of gbd's master problems into decision-log records, used by the daemon's recorder and
// by the tests that write logs the way it does. instance is the plant family's instance (its
// parameters, enough to rebuild the MINLP). The engine reuses view and it after its callback, so
// everything is copied. A carried cut is logged with Iter −1.
func MasterRecordOf(view *gbd.MasterView, it *gbd.Iteration, instance json.RawMessage) *MasterRecord {
	m := &MasterRecord{
		Iter: it.K, Prev: slices.Clone(view.Prev), Instance: instance,
		TkSeconds: Num(it.Tk.Seconds()), LBD: Num(it.LBD), UBD: Num(it.UBD),
		MasterSeconds: it.MasterTime.Seconds(), MasterStatus: masterStatus(it.Master),
		MasterY: slices.Clone(it.MasterY), MasterMu: Num(it.MasterMu), MasterBound: Num(it.MasterBound),
		Chosen: slices.Clone(it.Next),
	}
	if view.Ypb != nil {
		m.NY, m.YpbSignature, m.YpbCount = view.Ypb.NY, view.Ypb.Signature, view.Ypb.Count()
	} else {
		m.NY = len(view.Prev)
	}
	m.Cuts = make([]CutRecord, len(view.Cuts))
	for i := range view.Cuts {
		m.Cuts[i] = CutRecordOf(&view.Cuts[i])
	}
	if it.Outcome != gbd.OutcomeNone || it.Proposal >= 0 {
		p := &ProposalRecord{Index: it.Proposal, Outcome: it.Outcome, Logits: Nums(it.Logits), Probs: Nums(it.Probs)}
		if it.Proposal >= 0 && view.Ypb != nil && it.Proposal < view.Ypb.Count() {
			p.Y = view.Ypb.Float(it.Proposal, make([]float64, view.Ypb.NY))
		}
		m.Proposal = p
	}
	return m
}

// CutRecordOf is a cut's logged form (its coefficients copied; a carried cut has Iter −1).
func CutRecordOf(c *gbd.Cut) CutRecord {
	r := CutRecord{Kind: c.Kind.String(), Coef: slices.Clone(c.Coef), Const: c.Const, Iter: c.Iter, Carried: c.Carried, Hinges: c.Hinges != nil}
	if c.Carried {
		r.Iter = -1
	}
	return r
}

// Cut is the gbd.Cut a validated record holds (Validate checked kind, length and finiteness). Its
// coefficients are the record's.
func (c *CutRecord) Cut() gbd.Cut {
	kind, _ := gbd.ParseCutKind(c.Kind)
	return gbd.Cut{Kind: kind, Coef: c.Coef, Const: c.Const, Iter: c.Iter, Carried: c.Carried}
}

// GBDCuts are the master's cuts as gbd.Cuts (sharing the record's coefficients); with carriedOnly,
// only the cuts carried in from earlier steps. The cuts logged with hinges carry h (the problem's,
// gbd.FindHinges of the solve's instance; nil: none, the affine parts alone, still valid cuts).
func (m *MasterRecord) GBDCuts(carriedOnly bool, h *gbd.Hinges) []gbd.Cut {
	var out []gbd.Cut
	for i := range m.Cuts {
		if !carriedOnly || m.Cuts[i].Carried {
			c := m.Cuts[i].Cut()
			if m.Cuts[i].Hinges {
				c.Hinges = h
			}
			out = append(out, c)
		}
	}
	return out
}

func masterStatus(s gbd.MasterStatus) string {
	if s == 0 {
		return "none"
	}
	return s.String()
}
