package telemetry

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// compressChunk is how much the compressor copies between checks for Close's deadline.
const compressChunk = 1 << 20

var errAborted = errors.New("aborted")

// maintain is the maintenance goroutine: it compresses rotated segments and enforces retention, so
// that neither slows the writer. It touches only segments older than the active one, which the
// writer never reopens, and exits when the writer closes kick.
func (l *DecisionLog) maintain() {
	defer close(l.maintDone)
	for {
		select {
		case _, ok := <-l.kick:
			if !ok {
				return
			}
			l.maintainOnce()
		case <-l.abort:
			return
		}
	}
}

func (l *DecisionLog) maintainOnce() {
	listing, err := listDir(l.dir)
	if err != nil {
		l.log.Warnw("maintenance cannot list the directory", "error", err)
		return
	}
	active := l.activeSeq.Load()
	if l.opt.Compress {
		for i, s := range listing.segments {
			if s.seq >= active || !s.plain || s.gz {
				continue
			}
			err := l.compress(s.seq)
			if errors.Is(err, errAborted) {
				return
			}
			if err != nil {
				l.log.Warnw("could not compress a segment; it stays uncompressed",
					"seq", s.seq, "error", err)
				continue
			}
			listing.segments[i] = segmentSet{seq: s.seq, gz: true}
		}
	}
	if l.opt.MaxSegments > 0 && len(listing.segments) > l.opt.MaxSegments {
		for _, s := range listing.segments[:len(listing.segments)-l.opt.MaxSegments] {
			if s.seq >= active {
				break
			}
			for _, gz := range []bool{false, true} {
				if (gz && !s.gz) || (!gz && !s.plain) {
					continue
				}
				p := filepath.Join(l.dir, segmentName(s.seq, gz))
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					l.log.Warnw("retention could not remove a segment", "path", p, "error", err)
				}
			}
		}
		l.syncDirIfDurable()
	}
}

// compress replaces decisions-<seq>.jsonl by decisions-<seq>.jsonl.gz so that a crash at any point
// leaves at least one complete copy: the .gz is written under a temporary name and fsynced, renamed,
// and only then is the .jsonl removed.
func (l *DecisionLog) compress(seq uint64) (err error) {
	src := filepath.Join(l.dir, segmentName(seq, false))
	dst := filepath.Join(l.dir, segmentName(seq, true))
	tmp := dst + tmpSuffix
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(tmp)
		}
	}()
	zw, err := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if err != nil {
		return err
	}
	for {
		select {
		case <-l.abort:
			return errAborted
		default:
		}
		n, err := io.CopyN(zw, in, compressChunk)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if n < compressChunk {
			break
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	if err := syncDir(l.dir); err != nil {
		// Without the rename on disk, removing the source could leave neither after a power loss.
		l.log.Warnw("fsync of the directory failed; keeping the uncompressed segment too", "error", err)
		return nil
	}
	if err := os.Remove(src); err != nil {
		l.log.Warnw("could not remove a compressed segment's source", "path", src, "error", err)
		return nil
	}
	l.syncDirIfDurable()
	return nil
}

func (l *DecisionLog) syncDirIfDurable() {
	if l.opt.Fsync == FsyncNever {
		return
	}
	if err := syncDir(l.dir); err != nil {
		l.log.Debugw("fsync of the directory failed", "error", err)
	}
}
