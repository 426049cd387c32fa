package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"gbdmpc/telemetry"
)

// logCollector exports a DecisionLog's counters. It reads them at scrape time, so the write path
// keeps plain atomic counters and knows nothing of Prometheus.
type logCollector struct {
	l                                                       *telemetry.DecisionLog
	records, dropped, writeErrors, rejected, bytes, rotated *prometheus.Desc
	queue, healthy                                          *prometheus.Desc
}

// decisionLogCollector returns a Prometheus collector for a decision log's metrics:
//
//	gbdmpc_decisionlog_records_total          records written
//	gbdmpc_decisionlog_dropped_total          records dropped (queue full, closed)
//	gbdmpc_decisionlog_write_errors_total     I/O failures (records lost, failed fsyncs)
//	gbdmpc_decisionlog_rejected_total         invalid records refused
//	gbdmpc_decisionlog_bytes_total            bytes written
//	gbdmpc_decisionlog_segments_rotated_total segments rotated
//	gbdmpc_decisionlog_queue_records          records waiting for the writer
//	gbdmpc_decisionlog_healthy                1 while writes succeed, 0 after a failure
func decisionLogCollector(l *telemetry.DecisionLog) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("gbdmpc_decisionlog_"+name, help, nil, nil)
	}
	return &logCollector{
		l:           l,
		records:     d("records_total", "Decision-log records written."),
		dropped:     d("dropped_total", "Decision-log records dropped because the queue was full or the log closed."),
		writeErrors: d("write_errors_total", "Decision-log I/O failures: records that could not be written and failed fsyncs."),
		rejected:    d("rejected_total", "Decision-log records refused as invalid."),
		bytes:       d("bytes_total", "Bytes written to decision-log segments."),
		rotated:     d("segments_rotated_total", "Decision-log segments rotated."),
		queue:       d("queue_records", "Decision-log records waiting for the writer."),
		healthy:     d("healthy", "1 while the decision log writes successfully, 0 after an I/O failure."),
	}
}

// registerDecisionLogMetrics registers the log's collector with reg.
func registerDecisionLogMetrics(reg prometheus.Registerer, l *telemetry.DecisionLog) error {
	return reg.Register(decisionLogCollector(l))
}

func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.records, c.dropped, c.writeErrors, c.rejected, c.bytes, c.rotated, c.queue, c.healthy} {
		ch <- d
	}
}

func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(c.records, c.l.Records())
	counter(c.dropped, c.l.Dropped())
	counter(c.writeErrors, c.l.WriteErrors())
	counter(c.rejected, c.l.Rejected())
	counter(c.bytes, c.l.Bytes())
	counter(c.rotated, c.l.Rotated())
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(c.l.Queued()))
	healthy := 0.0
	if c.l.Healthy() {
		healthy = 1
	}
	ch <- prometheus.MustNewConstMetric(c.healthy, prometheus.GaugeValue, healthy)
}
