package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Sync after Close.
var ErrClosed = errors.New("decision log: closed")

// DecisionLog appends records to segment files from a single goroutine it owns, fed by a bounded
// queue that Write fills without ever blocking. See the package documentation for what survives a
// crash.
type DecisionLog struct {
	dir   string
	opt   LogOptions
	log   Logger
	clock Clock

	// mu makes closing the queue safe against concurrent Writes: Write sends while holding it shared,
	// Close closes the queue while holding it exclusively, for a few instructions.
	mu     sync.RWMutex
	closed bool
	queue  chan *Record

	syncReq   chan chan error
	abort     chan struct{} // closed when Close's context ends: stop writing, drop the rest
	abortOnce sync.Once
	done      chan struct{} // closed when the writer goroutine has exited
	kick      chan struct{} // wakes the maintenance goroutine; nil when there is no maintenance
	maintDone chan struct{}
	closeErr  error // set by the writer goroutine before done is closed

	records     atomic.Uint64
	dropped     atomic.Uint64
	writeErrors atomic.Uint64
	rejected    atomic.Uint64
	bytes       atomic.Uint64
	rotated     atomic.Uint64
	healthy     atomic.Bool
	activeSeq   atomic.Uint64 // the newest segment the writer opened or will open; maintenance leaves it alone

	errMu   sync.Mutex
	lastErr error

	w writerState // owned by the writer goroutine
}

// writerState is everything only the writer goroutine touches.
type writerState struct {
	f          segmentFile
	path       string // f's path, for verifySegment
	seq        uint64
	size       int64
	opened     time.Time
	lastSync   time.Time
	dirty      bool   // written since the last fsync
	newFile    bool   // the open segment was created empty: its directory entry waits for the next fsync
	errsAtSync uint64 // WriteErrors when Sync last reported
	buf        bytes.Buffer
	enc        *json.Encoder
	drops      rateLimited
	dropsSeen  uint64
	rejects    rateLimited
	chains     writeChains // master records written as continuations (chain.go)
}

// Open starts a decision log in dir (created 0750 if missing). It repairs a torn tail of the newest
// segment — keeping a copy of the segment first — and appends to it, removes the leftovers of an
// interrupted compression, and starts the writer goroutine. logger receives the log's own
// warnings (the daemon passes its zap logger, named for the log and the directory, as a
// SugaredLogger); nil logs nothing. A nil clock is the system clock. Open fails only when dir cannot be created or listed, or opt is invalid:
// everything later is reported through WriteErrors, Healthy and LastError instead.
func Open(dir string, opt LogOptions, logger Logger, clock Clock) (*DecisionLog, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = nopLogger{}
	}
	if clock == nil {
		clock = systemClock{}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	listing, err := listDir(dir)
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	l := &DecisionLog{
		dir:     dir,
		opt:     opt,
		log:     logger,
		clock:   clock,
		queue:   make(chan *Record, opt.QueueSize),
		syncReq: make(chan chan error),
		abort:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	l.healthy.Store(true)
	l.removeLeftovers(listing)
	l.w.seq = l.resumeSeq(listing)
	l.activeSeq.Store(l.w.seq)
	l.w.enc = json.NewEncoder(&l.w.buf)
	l.w.chains = writeChains{}
	l.w.enc.SetEscapeHTML(false)

	if opt.Compress || opt.MaxSegments > 0 {
		l.kick = make(chan struct{}, 1)
		l.kick <- struct{}{} // catch up on segments a previous process rotated but did not compress
		l.maintDone = make(chan struct{})
		go l.maintain()
	}
	go l.run()
	return l, nil
}

// removeLeftovers deletes half-written .gz files and plain segments whose .gz was completed.
func (l *DecisionLog) removeLeftovers(listing dirListing) {
	for _, p := range listing.tmp {
		if err := os.Remove(p); err != nil {
			l.log.Warnw("removing an unfinished compressed segment", "path", p, "error", err)
		}
	}
	for _, s := range listing.segments {
		if s.plain && s.gz {
			p := filepath.Join(l.dir, segmentName(s.seq, false))
			if err := os.Remove(p); err != nil {
				l.log.Warnw("removing a segment already compressed", "path", p, "error", err)
			}
		}
	}
}

// resumeSeq repairs the newest segment and returns the sequence number to append to: the newest
// segment when it is plain and sound, the next one otherwise.
func (l *DecisionLog) resumeSeq(listing dirListing) uint64 {
	if len(listing.segments) == 0 {
		return 1
	}
	newest := listing.segments[len(listing.segments)-1]
	if newest.gz {
		return newest.seq + 1
	}
	path := filepath.Join(l.dir, segmentName(newest.seq, false))
	cut, copyPath, err := repairTail(path, l.clock.Now().UnixMilli(), l.opt.Fsync != FsyncNever)
	if err != nil {
		l.log.Warnw("could not repair the newest segment; starting a new one",
			"path", path, "error", err)
		return newest.seq + 1
	}
	if cut > 0 {
		l.log.Warnw("cut a torn tail off the newest segment",
			"path", path, "bytes_cut", cut, "copy", copyPath)
	}
	return newest.seq
}

// Write hands r to the writer goroutine and returns at once. It returns false, counting the record
// in Dropped, when the queue is full or the log is closed. It fills V and TSms when they are zero.
// The log owns r from then on: the caller must not modify it, nor anything it points to.
func (l *DecisionLog) Write(r *Record) bool {
	if r == nil {
		l.rejected.Add(1)
		return false
	}
	if r.V == 0 {
		r.V = SchemaVersion
	}
	if r.TSms == 0 {
		r.TSms = l.clock.Now().UnixMilli()
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.dropped.Add(1)
		return false
	}
	select {
	case l.queue <- r:
		return true
	default:
		l.dropped.Add(1)
		return false
	}
}

// Sync waits until every record enqueued before the call has been written and fsynced (whatever the
// policy). It returns the last I/O error when records were lost or an fsync failed since the
// previous Sync, so a caller that syncs at checkpoints learns whether everything before it is safe.
func (l *DecisionLog) Sync(ctx context.Context) error {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	reply := make(chan error, 1)
	select {
	case l.syncReq <- reply:
	case <-l.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting records, writes those still queued, fsyncs (unless FsyncNever) and closes
// the segment. When ctx ends first, the records still queued are dropped and Close returns ctx's
// error without waiting for the goroutines, which exit once the write in progress returns. Calling
// Close again returns nil.
func (l *DecisionLog) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.queue)
	l.mu.Unlock()

	wait := func(ch <-chan struct{}) error {
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			l.abortOnce.Do(func() { close(l.abort) })
			return fmt.Errorf("decision log: close: %w", ctx.Err())
		}
	}
	if err := wait(l.done); err != nil {
		return err
	}
	if err := wait(l.maintDone); err != nil {
		return err
	}
	return l.closeErr
}

// Records is the number of records written.
func (l *DecisionLog) Records() uint64 { return l.records.Load() }

// Dropped is the number of records lost because the queue was full, the log was closed, or Close's
// context ended before they were written.
func (l *DecisionLog) Dropped() uint64 { return l.dropped.Load() }

// WriteErrors is the number of I/O failures: records that could not be written because a segment
// could not be opened or written, and fsyncs that failed. Records lost this way are not in Dropped.
func (l *DecisionLog) WriteErrors() uint64 { return l.writeErrors.Load() }

// Rejected is the number of records refused because they were nil, failed Validate, had another
// schema version, or could not be encoded.
func (l *DecisionLog) Rejected() uint64 { return l.rejected.Load() }

// Bytes is the number of bytes written to segments.
func (l *DecisionLog) Bytes() uint64 { return l.bytes.Load() }

// Rotated is the number of segments rotated.
func (l *DecisionLog) Rotated() uint64 { return l.rotated.Load() }

// Queued is the number of records waiting for the writer.
func (l *DecisionLog) Queued() int { return len(l.queue) }

// Healthy reports whether the last attempt to write or fsync succeeded.
func (l *DecisionLog) Healthy() bool { return l.healthy.Load() }

// LastError is the most recent I/O error, kept after recovery; Healthy says whether it still applies.
func (l *DecisionLog) LastError() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.lastErr
}

// Dir is the directory the log writes to.
func (l *DecisionLog) Dir() string { return l.dir }
