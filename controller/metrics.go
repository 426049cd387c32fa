package controller

import (
	"runtime"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"gbdmpc/configs"
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
	proposals        *prometheus.CounterVec
	accepted         *prometheus.CounterVec
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
	plant := []string{"plant"}
	m := &metrics{
		solveSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gbdmpc_controller_solve_duration_seconds", Help: "Wall time of mpc Step (solve or fallback), seconds.",
			Buckets: solveBuckets(plants)}, plant),
		overheadSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gbdmpc_controller_loop_overhead_seconds", Help: "Measurement received to action handed to MQTT, minus the solve, seconds.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14)}, plant),
		deadlineMisses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_deadline_misses_total", Help: "Valid measurements whose action was withheld because the deadline passed first (never published late)."}, plant),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_fallbacks_total", Help: "Steps that published a fallback (shifted plan or safe action)."}, []string{"plant", "kind"}),
		relaxedSteps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_relaxed_steps_total", Help: "Steps whose action is the soft problem's optimum because the plant's hard limits cannot be held over the horizon."}, plant),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_actions_total", Help: "Actions published, by status."}, []string{"plant", "status"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_rejected_total", Help: "Measurements rejected, by reason."}, []string{"plant", "reason"}),
		errorsSuppressed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_errors_suppressed_total", Help: "Rejections whose error message the plant's rate limit (error_rate, error_burst) withheld; the next error message reports them."}, plant),
		mailboxDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_mailbox_dropped_total", Help: "Valid measurements superseded by newer valid ones before the loop took them."}, plant),
		proposals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_agent_proposals_total", Help: "Master-problem proposals made by the agent."}, plant),
		feasible: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_agent_feasible_total", Help: "Agent proposals that passed the feasibility screen."}, plant),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_agent_accepted_total", Help: "Agent proposals used as the next GBD iterate."}, plant),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_mqtt_reconnects_total", Help: "MQTT connections re-established after a loss."}, plant),
		connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gbdmpc_mqtt_connected", Help: "1 while the plant's MQTT session is connected."}, plant),
		publishFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_mqtt_publish_failures_total", Help: "Publishes the broker did not acknowledge, by topic kind."}, []string{"plant", "kind"}),
		policyReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_policy_reloads_total", Help: "Policy (re)loads, by result."}, []string{"plant", "result"}),
		policyReloadErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_policy_reload_errors_total", Help: "Policies refused at start, on reload or after their file changed; the plant kept its current one."}, plant),
		policyInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gbdmpc_controller_policy_info", Help: "The plant's running policy version (empty: classical GBD); the value is always 1."}, []string{"plant", "version"}),
		lastMeasurement: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gbdmpc_controller_last_measurement_timestamp_seconds", Help: "Receipt time of the last accepted measurement."}, plant),
		alarm: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gbdmpc_controller_alarm", Help: "1 while the plant's status carries an alarm (the decision log losing records, or hard limits that cannot be held)."}, plant),
		haActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gbdmpc_controller_ha_active", Help: "1 while this daemon publishes the plant's actions (always 1 without HA)."}, plant),
		haTakeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_ha_takeovers_total", Help: "Times this daemon became the plant's active daemon of its HA group."}, plant),
		haWithheld: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_ha_withheld_total", Help: "Actions not published because the connection their measurement came on was lost before they could go out."}, plant),
		haForeignActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gbdmpc_controller_ha_foreign_actions_total", Help: "Actions of another daemon seen while this one was active (should stay 0)."}, plant),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gbdmpc_build_info", Help: "Build information; the value is always 1."}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	for _, c := range []prometheus.Collector{m.solveSeconds, m.overheadSeconds, m.deadlineMisses, m.fallbacks,
		m.relaxedSteps, m.actions, m.rejected, m.errorsSuppressed, m.mailboxDropped, m.proposals, m.feasible, m.accepted, m.reconnects, m.connected,
		m.publishFailures, m.policyReloads, m.policyReloadErrors, m.policyInfo, m.lastMeasurement, m.alarm, m.haActive, m.haTakeovers, m.haForeignActions, m.haWithheld, build} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
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
		m.errorsSuppressed.WithLabelValues(p.ID)
		m.reconnects.WithLabelValues(p.ID)
		m.connected.WithLabelValues(p.ID)
		m.proposals.WithLabelValues(p.ID)
		m.accepted.WithLabelValues(p.ID)
		m.feasible.WithLabelValues(p.ID)
		m.policyReloadErrors.WithLabelValues(p.ID)
		m.haTakeovers.WithLabelValues(p.ID)
		m.alarm.WithLabelValues(p.ID)
		m.haForeignActions.WithLabelValues(p.ID)
		m.haWithheld.WithLabelValues(p.ID)
	}
	return m, nil
}
