package telemetry

import (
	"cmp"
	"fmt"
	"time"

	"gbdmpc/internal/enum"
)

// Clock gives the time. The decision log reads it to stamp records, to age segments and to pace
// interval fsyncs, so tests can drive all three with a fake one.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// FsyncPolicy says when the writer forces written records to stable storage. doc.go states what
// survives a crash under each.
type FsyncPolicy int

const (
	// FsyncInterval (the default) fsyncs at most FsyncEvery after a record was written, and on
	// rotation, Sync and Close.
	FsyncInterval FsyncPolicy = iota
	// FsyncNever leaves write-back to the operating system, even on rotation and Close.
	FsyncNever
	// FsyncAlways fsyncs after every record before taking the next one from the queue.
	FsyncAlways
)

var fsyncNames = [...]string{
	FsyncInterval: "interval",
	FsyncNever:    "never",
	FsyncAlways:   "always",
}

func (p FsyncPolicy) String() string { return enum.Name(fsyncNames[:], p, "FsyncPolicy") }

// Defaults used for zero-valued LogOptions fields.
const (
	DefaultMaxSegmentBytes = 64 << 20
	DefaultMaxSegmentAge   = time.Hour
	DefaultQueueSize       = 4096
	DefaultFsyncEvery      = time.Second
)

// LogOptions configure a DecisionLog. The zero value means the documented defaults.
type LogOptions struct {
	// MaxSegmentBytes rotates the active segment before a record would take it past this size
	// (default 64 MiB). A record larger than this gets a segment of its own.
	MaxSegmentBytes int64
	// MaxSegmentAge rotates the active segment when a record arrives this long after the segment was
	// opened by this process (default 1h; negative disables age rotation).
	MaxSegmentAge time.Duration
	// MaxSegments keeps at most this many segments, deleting the oldest after a rotation (0 keeps all).
	MaxSegments int
	// Compress gzips rotated segments in the background, at gzip.BestSpeed to spare the solver's CPU.
	Compress bool
	// QueueSize bounds the records waiting for the writer (default 4096); Write drops beyond it.
	QueueSize int
	// Fsync is the fsync policy (default FsyncInterval).
	Fsync FsyncPolicy
	// FsyncEvery is the FsyncInterval period (default 1s).
	FsyncEvery time.Duration

	// openFile replaces how segments are opened; tests use it to block or fail writes.
	openFile fileOpener
}

func (o LogOptions) withDefaults() (LogOptions, error) {
	switch {
	case o.MaxSegmentBytes < 0:
		return o, fmt.Errorf("decision log: MaxSegmentBytes %d is negative", o.MaxSegmentBytes)
	case o.MaxSegments < 0:
		return o, fmt.Errorf("decision log: MaxSegments %d is negative", o.MaxSegments)
	case o.QueueSize < 0:
		return o, fmt.Errorf("decision log: QueueSize %d is negative", o.QueueSize)
	case o.FsyncEvery < 0:
		return o, fmt.Errorf("decision log: FsyncEvery %v is negative", o.FsyncEvery)
	case o.Fsync < FsyncInterval || o.Fsync > FsyncAlways:
		return o, fmt.Errorf("decision log: unknown fsync policy %v", o.Fsync)
	}
	o.MaxSegmentBytes = cmp.Or(o.MaxSegmentBytes, DefaultMaxSegmentBytes)
	o.MaxSegmentAge = cmp.Or(o.MaxSegmentAge, DefaultMaxSegmentAge)
	o.QueueSize = cmp.Or(o.QueueSize, DefaultQueueSize)
	o.FsyncEvery = cmp.Or(o.FsyncEvery, DefaultFsyncEvery)
	if o.openFile == nil {
		o.openFile = openSegmentFile
	}
	return o, nil
}

// Logger is what the decision log reports its own trouble to: structured messages with key–value
// pairs, as zap's SugaredLogger writes them (the daemon passes one); it keeps the log itself free
// of a logging library.
type Logger interface {
	Debugw(msg string, keysAndValues ...any)
	Infow(msg string, keysAndValues ...any)
	Warnw(msg string, keysAndValues ...any)
}

type nopLogger struct{}

func (nopLogger) Debugw(string, ...any) {}
func (nopLogger) Infow(string, ...any)  {}
func (nopLogger) Warnw(string, ...any)  {}
