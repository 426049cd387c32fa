package telemetry

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// warnEvery bounds how often the writer repeats a warning about drops or rejected records.
const warnEvery = 10 * time.Second

// run is the writer goroutine: the only code that touches the active segment.
func (l *DecisionLog) run() {
	defer close(l.done)
	if l.kick != nil {
		defer close(l.kick)
	}
	var tick <-chan time.Time
	if l.opt.Fsync == FsyncInterval {
		// The ticker only bounds how long a record waits for its fsync when no further record comes;
		// with records flowing, handle fsyncs on the injected clock.
		t := time.NewTicker(l.opt.FsyncEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case r, ok := <-l.queue:
			if !ok {
				l.closeErr = l.finish()
				return
			}
			l.handle(r)
		case reply := <-l.syncReq:
			reply <- l.flush()
		case <-tick:
			l.sync()
		case <-l.abort:
			for range l.queue {
				l.dropped.Add(1)
			}
			l.closeErr = l.finish()
			return
		}
	}
}

// handle writes one record as one line with one write call.
func (l *DecisionLog) handle(r *Record) {
	now := l.clock.Now()
	l.warnDrops(now)
	if err := l.check(r); err != nil {
		l.reject(now, r, err)
		return
	}
	// A master record continues its chain only within the open segment; if writing it opens a
	// new one, it is written whole.
	seq, cont := l.w.seq, 0
	if r.Type == TypeMaster && l.w.f != nil {
		cont = l.w.chains.prefix(r, seq)
	}
	line, err := l.encode(r, cont)
	if err != nil {
		l.reject(now, r, err)
		return
	}
	// A line that went into a file no longer at its path (the directory or the file was removed or
	// replaced) is not on disk: it is written once more, to a new segment.
	for attempt := 0; ; attempt++ {
		if err := l.prepare(now, int64(len(line))); err != nil {
			l.ioFailed(err)
			clear(l.w.chains)
			return
		}
		if l.w.seq != seq && cont > 0 {
			if line, err = l.encode(r, 0); err != nil { // encoded once already: cannot fail now
				l.ioFailed(err)
				return
			}
			cont = 0
		}
		n, err := l.w.f.Write(line)
		if err == nil && n < len(line) {
			err = io.ErrShortWrite
		}
		if err != nil {
			l.ioFailed(err)
			l.abandonSegment(n)
			clear(l.w.chains)
			return
		}
		landed, err := l.verifySegment(int64(n))
		if err == nil {
			break
		}
		l.ioFailed(err)
		l.loseSegment()
		clear(l.w.chains)
		if landed {
			// Truncated underneath: this line is in the file, only what came before it is not.
			l.records.Add(1)
			l.bytes.Add(uint64(n))
			return
		}
		if attempt > 0 {
			return
		}
	}
	n := len(line)
	l.w.chains.wrote(r, l.w.seq)
	l.w.size += int64(n)
	l.w.dirty = true
	l.records.Add(1)
	l.bytes.Add(uint64(n))
	switch l.opt.Fsync {
	case FsyncAlways:
		if l.sync() != nil {
			return
		}
	case FsyncInterval:
		if now.Sub(l.w.lastSync) >= l.opt.FsyncEvery && l.sync() != nil {
			return
		}
	}
	if !l.healthy.Load() {
		l.healthy.Store(true)
		l.log.Infow("decision log recovered", "write_errors", l.writeErrors.Load())
	}
}

// check refuses what the reader would not read back: another schema version, an invalid record.
func (l *DecisionLog) check(r *Record) error {
	if r.V != SchemaVersion {
		return fmt.Errorf("schema version %d, this writer writes %d", r.V, SchemaVersion)
	}
	if r.Master != nil && r.Master.CutsFrom != 0 {
		return fmt.Errorf("a master record is given whole (cuts_from %d)", r.Master.CutsFrom)
	}
	return r.Validate()
}

// reject counts a record the writer refuses and warns of it, rate-limited.
func (l *DecisionLog) reject(now time.Time, r *Record, err error) {
	l.rejected.Add(1)
	if n := l.w.rejects.add(now, 1); n > 0 {
		l.log.Warnw("decision log rejected records", "count", n,
			"type", r.Type, "plant", r.Plant, "error", err)
	}
}

// encode returns a checked record r as one '\n'-terminated line, valid for the reader: a
// continuation of its chain's first cont cuts when cont > 0.
func (l *DecisionLog) encode(r *Record, cont int) ([]byte, error) {
	if cont > 0 {
		r = continuation(r, cont)
	}
	l.w.buf.Reset()
	if err := l.w.enc.Encode(r); err != nil {
		return nil, err
	}
	return l.w.buf.Bytes(), nil
}

// prepare rotates the active segment when the next line of n bytes would take it past its size or
// age limit, and opens a segment when none is open.
func (l *DecisionLog) prepare(now time.Time, n int64) error {
	if l.w.f != nil && l.w.size > 0 {
		full := l.w.size+n > l.opt.MaxSegmentBytes
		old := l.opt.MaxSegmentAge > 0 && now.Sub(l.w.opened) >= l.opt.MaxSegmentAge
		if full || old {
			l.rotate()
		}
	}
	if l.w.f == nil {
		return l.openSegment(now)
	}
	return nil
}

func (l *DecisionLog) rotate() {
	if l.opt.Fsync != FsyncNever {
		l.sync()
	}
	if l.w.f == nil { // the fsync failed and abandoned the segment
		return
	}
	if err := l.w.f.Close(); err != nil {
		l.ioFailed(err)
	}
	l.w.f = nil
	l.w.seq++
	l.rotated.Add(1)
}

func (l *DecisionLog) openSegment(now time.Time) error {
	path := filepath.Join(l.dir, segmentName(l.w.seq, false))
	f, size, err := l.opt.openFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		// Someone removed the directory; recreate it rather than lose every record from now on.
		if mkErr := os.MkdirAll(l.dir, 0o750); mkErr == nil {
			f, size, err = l.opt.openFile(path)
		}
	}
	if err != nil {
		return err
	}
	l.w.f, l.w.path, l.w.size, l.w.opened, l.w.lastSync, l.w.dirty = f, path, size, now, now, false
	// The new file's directory entry is made durable with its first fsync (sync), not here: an
	// fsync of the directory can take long on a busy disk, and records queued behind it are lost if
	// the process is killed meanwhile, where written ones survive in the page cache.
	l.w.newFile = size == 0
	if prev := l.activeSeq.Swap(l.w.seq); prev != l.w.seq && l.kick != nil {
		select {
		case l.kick <- struct{}{}:
		default: // a pass is already pending; it will see the new active segment
		}
	}
	return nil
}

// verifySegment checks, after n bytes were appended, that the open segment is still the file at its
// path and holds everything written to it: a directory removed with the segment in it, or a file
// removed, replaced or truncated underneath, leaves the writer appending to a file nobody will read
// (or to one missing what came before), with every write succeeding. landed reports whether the
// last n bytes are in the file at the path all the same (a truncation: O_APPEND put them at its new
// end).
func (l *DecisionLog) verifySegment(n int64) (landed bool, err error) {
	path := l.w.path
	open, err := l.w.f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat of the open segment %s: %w", path, err)
	}
	there, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("segment %s was removed while open (or its directory was)", path)
	case err != nil:
		return false, fmt.Errorf("segment %s: %w", path, err)
	case !os.SameFile(open, there):
		return false, fmt.Errorf("segment %s was replaced by another file while open", path)
	case open.Size() < l.w.size+n:
		return true, fmt.Errorf("segment %s was truncated underneath the writer: %d bytes, %d written", path, open.Size(), l.w.size+n)
	}
	return false, nil
}

// loseSegment closes a segment that is no longer what the writer wrote (verifySegment) without
// touching its path, which is no longer the writer's, and moves on to a new segment. The directory
// is recreated, if it has to be, when that one opens.
func (l *DecisionLog) loseSegment() {
	l.w.f.Close()
	l.w.f = nil
	l.w.dirty = false
	l.w.seq++
}

// abandonSegment closes a segment after a failed write of which n bytes reached the file. It cuts
// them off so the segment ends with a complete record, and moves on to a new segment because a file
// that has failed once is not trusted again. An empty segment is removed and its number reused.
func (l *DecisionLog) abandonSegment(n int) {
	if l.w.f == nil {
		return
	}
	if n > 0 {
		if err := l.w.f.Truncate(l.w.size); err != nil {
			l.log.Warnw("could not cut a partial record; the reader will skip it as torn", "error", err)
		}
	}
	l.w.f.Close()
	l.w.f = nil
	l.w.dirty = false
	if l.w.size == 0 {
		if err := os.Remove(filepath.Join(l.dir, segmentName(l.w.seq, false))); err == nil {
			return
		}
	}
	l.w.seq++
}

// sync fsyncs the active segment if anything was written since the last fsync. A failed fsync
// abandons the segment: after one, the kernel may already have dropped the unwritten pages.
func (l *DecisionLog) sync() error {
	if l.w.f == nil || !l.w.dirty {
		return nil
	}
	l.w.lastSync = l.clock.Now()
	if err := l.w.f.Sync(); err != nil {
		l.ioFailed(err)
		l.abandonSegment(0)
		return err
	}
	l.w.dirty = false
	if l.w.newFile {
		l.w.newFile = false
		l.syncDirIfDurable()
	}
	return nil
}

// flush serves Sync: it writes what was queued before the request, fsyncs, and reports the last I/O
// error if there was any since the previous Sync.
func (l *DecisionLog) flush() error {
	for n := len(l.queue); n > 0; n-- {
		r, ok := <-l.queue
		if !ok {
			break
		}
		l.handle(r)
	}
	err := l.sync()
	if errs := l.writeErrors.Load(); errs != l.w.errsAtSync {
		l.w.errsAtSync = errs
		if err == nil {
			err = l.LastError()
		}
	}
	return err
}

// finish fsyncs and closes the active segment when the writer stops.
func (l *DecisionLog) finish() error {
	if l.w.f == nil {
		return nil
	}
	var err error
	if l.opt.Fsync != FsyncNever {
		err = l.sync()
	}
	if l.w.f != nil {
		if cerr := l.w.f.Close(); cerr != nil && err == nil {
			l.ioFailed(cerr)
			err = cerr
		}
		l.w.f = nil
	}
	if err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	return nil
}

// ioFailed counts an I/O error and marks the log unhealthy, warning once per episode.
func (l *DecisionLog) ioFailed(err error) {
	l.writeErrors.Add(1)
	l.errMu.Lock()
	l.lastErr = err
	l.errMu.Unlock()
	if l.healthy.Swap(false) {
		l.log.Warnw("decision log cannot write; records are being lost until it recovers", "error", err)
	} else {
		l.log.Debugw("decision log write failed", "error", err)
	}
}

// warnDrops logs records that Write dropped since the last call, rate-limited: Write runs on the
// solver's goroutine and must not log.
func (l *DecisionLog) warnDrops(now time.Time) {
	d := l.dropped.Load()
	if d == l.w.dropsSeen {
		return
	}
	n := l.w.drops.add(now, d-l.w.dropsSeen)
	l.w.dropsSeen = d
	if n > 0 {
		l.log.Warnw("decision log dropped records", "dropped", n,
			"dropped_total", d, "queue_size", l.opt.QueueSize)
	}
}

// rateLimited counts events and says when to log them: the first at once, then at most once per
// warnEvery with the count accumulated in between.
type rateLimited struct {
	last    time.Time
	pending uint64
}

func (r *rateLimited) add(now time.Time, k uint64) uint64 {
	r.pending += k
	if !r.last.IsZero() && now.Sub(r.last) < warnEvery {
		return 0
	}
	n := r.pending
	r.pending, r.last = 0, now
	return n
}
