package replay

import (
	"fmt"
	"math"
	"time"

	"gbdmpc/policy"
)

// DefaultHoldout is the fraction of the latest solves held out when none is given.
const DefaultHoldout = 0.2

// Split is a replayed log cut in time: everything the new policy learns from happened before
// everything it is judged on.
type Split struct {
	Train, HeldOut             *policy.Dataset
	TrainSolves, HeldOutSolves []Solve
	// Cutoff is the start of the first held-out solve (zero when nothing is held out).
	Cutoff time.Time
}

// HoldOut puts the latest round(fraction·N) of the N solves (by start time) into the held-out slice,
// at least one when fraction > 0 and at most N−1, so that both sides are non-empty when N ≥ 2.
//
// The split is by time and never random: a random split would let the new policy train on plant
// states from after those it is judged on, which flatters it when the plant drifts — and drift is
// why one retrains. It is by solve, never by master problem: the masters of one GBD run share most
// of their cuts, so separating them would leak the answer.
func HoldOut(d *Data, fraction float64) (*Split, error) {
	if !(fraction >= 0 && fraction < 1) {
		return nil, fmt.Errorf("replay: hold-out fraction %v outside [0,1)", fraction)
	}
	n := len(d.Solves)
	k := int(math.Round(fraction * float64(n)))
	if fraction > 0 && n >= 2 {
		k = min(max(k, 1), n-1)
	}
	k = min(k, n)
	first := n - k // Solves are in start order, so the held-out slice is a suffix
	s := &Split{
		Train:         &policy.Dataset{Family: d.Dataset.Family, Ypb: d.Dataset.Ypb},
		HeldOut:       &policy.Dataset{Family: d.Dataset.Family, Ypb: d.Dataset.Ypb},
		TrainSolves:   d.Solves[:first],
		HeldOutSolves: d.Solves[first:],
	}
	if k > 0 {
		s.Cutoff = d.Solves[first].Start
	}
	for _, smp := range d.Dataset.Samples {
		if smp.Set >= first {
			s.HeldOut.Samples = append(s.HeldOut.Samples, smp)
		} else {
			s.Train.Samples = append(s.Train.Samples, smp)
		}
	}
	return s, nil
}
