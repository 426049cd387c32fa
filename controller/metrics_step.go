package controller

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"gbdmpc/configs"
	"gbdmpc/mpc"
)

// stepMetrics say what each published step cost and certified beyond its status, and carry each
// plant's configured period and deadline as series, so that a dashboard can draw solve times against
// the deadline and an alert rule can express "no measurement for N periods" without hard-coding a
// period per plant. The rules and dashboard in systemd/ use exactly these names.
type stepMetrics struct {
	iterations *prometheus.HistogramVec // GBD iterations of every step (fallbacks included)
	gap        *prometheus.GaugeVec     // UBD − LBD of the last certified step
	deadline   *prometheus.GaugeVec
	period     *prometheus.GaugeVec
}

func newStepMetrics(reg prometheus.Registerer, plants []configs.Plant) (*stepMetrics, error) {
	r := &registrar{reg: reg}
	s := &stepMetrics{
		iterations: r.histogram("gbdmpc_controller_gbd_iterations",
			"GBD iterations per control step (a fallback counts the iterations of its failed solve).",
			prometheus.ExponentialBuckets(1, 2, 9), "plant"),
		gap: r.gauge("gbdmpc_controller_certified_gap",
			"UBD − LBD of the plant's last certified action (status optimal or gap), in objective units; fallbacks leave it unchanged.", "plant"),
		deadline: r.gauge("gbdmpc_controller_deadline_seconds",
			"The plant's configured deadline: the action is due this long after the measurement's receipt.", "plant"),
		period: r.gauge("gbdmpc_controller_period_seconds", "The plant's configured control period.", "plant"),
	}
	if r.err != nil {
		return nil, r.err
	}
	// Period and deadline change only with a restart (a reload logs them as needing one).
	for _, p := range plants {
		s.deadline.WithLabelValues(p.ID).Set(p.Deadline.Seconds())
		s.period.WithLabelValues(p.ID).Set(p.Period.Seconds())
	}
	return s, nil
}

// observe records a published step. A fallback has no certificate (its UBD is +Inf without an
// incumbent), so the gap gauge keeps the last certified value; fallbacks have their own counter.
func (s *stepMetrics) observe(plant string, d *mpc.Decision) {
	s.iterations.WithLabelValues(plant).Observe(float64(d.Iterations))
	if gap := d.UBD - d.LBD; d.Status != mpc.StatusFallback && !math.IsNaN(gap) && !math.IsInf(gap, 0) {
		s.gap.WithLabelValues(plant).Set(gap)
	}
}
