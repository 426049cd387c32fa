package controller

import (
	"runtime"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"gbdmpc/configs"
	"gbdmpc/gbd/master/cbc"
)

// metrics are the daemon's own series; the decision log registers its gbdmpc_decisionlog_* series
// itself. Every series has a plant label, since one daemon serves several plants.
type metrics struct {
	solveSeconds    *prometheus.HistogramVec
	overheadSeconds *prometheus.HistogramVec
	deadlineMisses  *prometheus.CounterVec
	fallbacks       *prometheus.CounterVec
	// relaxedSteps counts actions whose plan breaks the plant's hard limits (the soft problem's
	// optimum, published with a "relaxed" object); alert rules are written against its name.
	relaxedSteps *prometheus.CounterVec
	actions      *prometheus.CounterVec
	rejected     *prometheus.CounterVec
	// errorsSuppressed counts rejections whose error message the per-plant rate limit withheld.
	errorsSuppressed *prometheus.CounterVec
	mailboxDropped   *prometheus.CounterVec
	cutShort         *prometheus.CounterVec
	proposals        *prometheus.CounterVec
	accepted         *prometheus.CounterVec
	benched          *prometheus.CounterVec
	feasible         *prometheus.CounterVec
	reconnects       *prometheus.CounterVec
	connected        *prometheus.GaugeVec
	publishFailures  *prometheus.CounterVec
	policyReloads    *prometheus.CounterVec
	// policyReloadErrors counts refused policies alone (start, SIGHUP or a changed file), the series
	// to alert on; policyInfo is 1 for each plant's running policy version.
	policyReloadErrors *prometheus.CounterVec
	policyInfo         *prometheus.GaugeVec
	lastMeasurement    *prometheus.GaugeVec
	// HA (ha.go): 1 while this daemon is the plant's active one, take-overs by this daemon, and
	// actions of another daemon seen while this one was active (must stay 0).
	// alarm is 1 while the plant's status carries an alarm (decision records being lost).
	alarm            *prometheus.GaugeVec
	haActive         *prometheus.GaugeVec
	haTakeovers      *prometheus.CounterVec
	haForeignActions *prometheus.CounterVec
	haWithheld       *prometheus.CounterVec
	step             *stepMetrics // metrics_step.go
}

// deadlineFractions place the solve-time buckets around each plant's deadline, where the interesting
// question (how close to the deadline do solves run, how many overrun) is answered.
var deadlineFractions = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.1, 1.25, 1.5, 2, 3, 5}

func solveBuckets(plants []configs.Plant) []float64 {
	var b []float64
	for _, p := range plants {
		for _, f := range deadlineFractions {
			b = append(b, f*p.Deadline.Seconds())
		}
	}
	if len(b) == 0 {
		return prometheus.DefBuckets
	}
	slices.Sort(b)
	return slices.Compact(b)
}

func newMetrics(reg prometheus.Registerer, plants []configs.Plant, version string) (*metrics, error) {
	r := &registrar{reg: reg}
	m := &metrics{
		solveSeconds: r.histogram("gbdmpc_controller_solve_duration_seconds", "Wall time of mpc Step (solve or fallback), seconds.",
			solveBuckets(plants), "plant"),
		overheadSeconds: r.histogram("gbdmpc_controller_loop_overhead_seconds", "Measurement received to action handed to MQTT, minus the solve, seconds.",
			prometheus.ExponentialBuckets(50e-6, 2, 14), "plant"),
		deadlineMisses: r.counter("gbdmpc_controller_deadline_misses_total",
			"Valid measurements whose action was withheld because the deadline passed first (never published late).", "plant"),
		fallbacks: r.counter("gbdmpc_controller_fallbacks_total",
			"Steps that published a fallback (shifted plan or safe action).", "plant", "kind"),
		relaxedSteps: r.counter("gbdmpc_controller_relaxed_steps_total",
			"Steps whose action is the soft problem's optimum because the plant's hard limits cannot be held over the horizon.", "plant"),
		actions: r.counter("gbdmpc_controller_actions_total",
			"Actions published, by status.", "plant", "status"),
		rejected: r.counter("gbdmpc_controller_rejected_total",
			"Measurements rejected, by reason.", "plant", "reason"),
		errorsSuppressed: r.counter("gbdmpc_controller_errors_suppressed_total",
			"Rejections whose error message the plant's rate limit (error_rate, error_burst) withheld; the next error message reports them.", "plant"),
		mailboxDropped: r.counter("gbdmpc_controller_mailbox_dropped_total",
			"Valid measurements superseded by newer valid ones before the loop took them.", "plant"),
		cutShort: r.counter("gbdmpc_controller_solves_cut_short_total",
			"Solves ended early because a newer valid measurement was waiting and going on would have left it less than a recent solve's time; the action answers with what the solve had.", "plant"),
		proposals: r.counter("gbdmpc_agent_proposals_total",
			"Master-problem proposals made by the agent.", "plant"),
		feasible: r.counter("gbdmpc_agent_feasible_total",
			"Agent proposals that passed the feasibility screen.", "plant"),
		accepted: r.counter("gbdmpc_agent_accepted_total",
			"Agent proposals used as the next GBD iterate.", "plant"),
		benched: r.counter("gbdmpc_agent_benched_total",
			"Master steps solved without asking the agent: after agent_patience of its proposals in a row lost, or with less time left before the deadline than twice what its proposals are expected to take.", "plant"),
		reconnects: r.counter("gbdmpc_mqtt_reconnects_total",
			"MQTT connections re-established after a loss.", "plant"),
		connected: r.gauge("gbdmpc_mqtt_connected",
			"1 while the plant's MQTT session is connected.", "plant"),
		publishFailures: r.counter("gbdmpc_mqtt_publish_failures_total",
			"Publishes the broker did not acknowledge, by topic kind.", "plant", "kind"),
		policyReloads: r.counter("gbdmpc_controller_policy_reloads_total",
			"Policy (re)loads, by result.", "plant", "result"),
		policyReloadErrors: r.counter("gbdmpc_controller_policy_reload_errors_total",
			"Policies refused at start, on reload or after their file changed; the plant kept its current one.", "plant"),
		policyInfo: r.gauge("gbdmpc_controller_policy_info",
			"The plant's running policy version (empty: classical GBD); the value is always 1.", "plant", "version"),
		lastMeasurement: r.gauge("gbdmpc_controller_last_measurement_timestamp_seconds",
			"Receipt time of the last accepted measurement.", "plant"),
		alarm: r.gauge("gbdmpc_controller_alarm",
			"1 while the plant's status carries an alarm (the decision log losing records, or hard limits that cannot be held).", "plant"),
		haActive: r.gauge("gbdmpc_controller_ha_active",
			"1 while this daemon publishes the plant's actions (always 1 without HA).", "plant"),
		haTakeovers: r.counter("gbdmpc_controller_ha_takeovers_total",
			"Times this daemon became the plant's active daemon of its HA group.", "plant"),
		haWithheld: r.counter("gbdmpc_controller_ha_withheld_total",
			"Actions not published because the connection their measurement came on was lost before they could go out.", "plant"),
		haForeignActions: r.counter("gbdmpc_controller_ha_foreign_actions_total",
			"Actions of another daemon seen while this one was active (should stay 0).", "plant"),
	}
	registerCBCWorkerMetrics(r)
	r.gauge("gbdmpc_build_info", "Build information; the value is always 1.", "version", "goversion").
		WithLabelValues(version, runtime.Version()).Set(1)
	if r.err != nil {
		return nil, r.err
	}
	step, err := newStepMetrics(reg, plants)
	if err != nil {
		return nil, err
	}
	m.step = step
	// Create the series of every plant up front, so a dashboard sees zeros rather than gaps, and so
	// that increase() in an alert rule sees the first fallback (a series born at 1 shows no increase).
	for _, p := range plants {
		for _, kind := range []string{"shifted", "safe"} {
			m.fallbacks.WithLabelValues(p.ID, kind)
		}
		m.deadlineMisses.WithLabelValues(p.ID)
		m.relaxedSteps.WithLabelValues(p.ID)
		m.mailboxDropped.WithLabelValues(p.ID)
		m.cutShort.WithLabelValues(p.ID)
		m.errorsSuppressed.WithLabelValues(p.ID)
		m.reconnects.WithLabelValues(p.ID)
		m.connected.WithLabelValues(p.ID)
		m.proposals.WithLabelValues(p.ID)
		m.accepted.WithLabelValues(p.ID)
		m.benched.WithLabelValues(p.ID)
		m.feasible.WithLabelValues(p.ID)
		m.policyReloadErrors.WithLabelValues(p.ID)
		m.haTakeovers.WithLabelValues(p.ID)
		m.alarm.WithLabelValues(p.ID)
		m.haForeignActions.WithLabelValues(p.ID)
		m.haWithheld.WithLabelValues(p.ID)
	}
	return m, nil
}

// registerCBCWorkerMetrics exports the process's CBC worker counts (cbc.Workers; the cbc master runs
// every solve in a worker process, backend.CBCMaster):
//
//	gbdmpc_cbc_workers                       worker processes alive
//	gbdmpc_cbc_workers_started_total         worker processes started
//	gbdmpc_cbc_solves_interrupted_total      master solves ended by the GBD solve's interrupt
//	gbdmpc_cbc_worker_failures_total{reason} master solves that got no answer from their worker:
//	                                          crashed (the worker ended mid-solve), overrun (killed
//	                                          past its time limit), unstarted (could not reach one)
func registerCBCWorkerMetrics(r *registrar) {
	r.register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gbdmpc_cbc_workers",
		Help: "CBC worker processes alive (idle or solving)."},
		func() float64 { return float64(cbc.Workers().Running) }))
	r.register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gbdmpc_cbc_workers_started_total",
		Help: "CBC worker processes started."},
		func() float64 { return float64(cbc.Workers().Started) }))
	r.register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gbdmpc_cbc_solves_interrupted_total",
		Help: "CBC master solves ended early, their worker killed, because the GBD solve was cut short (a newer measurement, the daemon stopping)."},
		func() float64 { return float64(cbc.Workers().Interrupted) }))
	for reason, n := range map[string]func(cbc.WorkerCounts) uint64{
		"crashed":   func(w cbc.WorkerCounts) uint64 { return w.Crashed },
		"overrun":   func(w cbc.WorkerCounts) uint64 { return w.Overrun },
		"unstarted": func(w cbc.WorkerCounts) uint64 { return w.Unstarted },
	} {
		r.register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gbdmpc_cbc_worker_failures_total",
			Help:        "CBC master solves that got no answer from their worker process, by reason: crashed (it ended mid-solve), overrun (killed past the solve's time limit), unstarted (none could be started or reached).",
			ConstLabels: prometheus.Labels{"reason": reason}},
			func() float64 { return float64(n(cbc.Workers())) }))
	}
}

// registrar makes metric vectors and registers each as it is made, keeping the first error.
type registrar struct {
	reg prometheus.Registerer
	err error
}

func (r *registrar) register(c prometheus.Collector) {
	if err := r.reg.Register(c); err != nil && r.err == nil {
		r.err = err
	}
}

func (r *registrar) counter(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	r.register(v)
	return v
}

func (r *registrar) gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	r.register(v)
	return v
}

func (r *registrar) histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	r.register(v)
	return v
}

// apply makes the metric changes a plant's core asked for (core.go).
func (m *metrics) apply(id string, ops []metricOp) {
	for _, op := range ops {
		switch op.kind {
		case mDeadlineMiss:
			m.deadlineMisses.WithLabelValues(id).Add(op.v)
		case mRejected:
			m.rejected.WithLabelValues(id, op.label).Add(op.v)
		case mCutShort:
			m.cutShort.WithLabelValues(id).Add(op.v)
		case mSolveSeconds:
			m.solveSeconds.WithLabelValues(id).Observe(op.v)
		case mOverheadSeconds:
			m.overheadSeconds.WithLabelValues(id).Observe(op.v)
		case mActions:
			m.actions.WithLabelValues(id, op.label).Add(op.v)
		case mProposals:
			m.proposals.WithLabelValues(id).Add(op.v)
		case mFeasible:
			m.feasible.WithLabelValues(id).Add(op.v)
		case mAccepted:
			m.accepted.WithLabelValues(id).Add(op.v)
		case mBenched:
			m.benched.WithLabelValues(id).Add(op.v)
		case mRelaxed:
			m.relaxedSteps.WithLabelValues(id).Add(op.v)
		case mFallbacks:
			m.fallbacks.WithLabelValues(id, op.label).Add(op.v)
		case mHAWithheld:
			m.haWithheld.WithLabelValues(id).Add(op.v)
		case mHATakeovers:
			m.haTakeovers.WithLabelValues(id).Add(op.v)
		case mHAForeign:
			m.haForeignActions.WithLabelValues(id).Add(op.v)
		case mHAActive:
			m.haActive.WithLabelValues(id).Set(op.v)
		case mAlarm:
			m.alarm.WithLabelValues(id).Set(op.v)
		}
	}
}
