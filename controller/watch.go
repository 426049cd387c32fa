package controller

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"gbdmpc/configs"
)

// The policy watch deploys a retrained agent by replacing its file, without a SIGHUP: every
// policy_watch the reloader looks at each plant's policy file and, when it changed, loads it exactly
// as a reload would (Deps.Policies: policy.Load, then CheckFits against the family's Y_pb) and hands
// it to the plant loop, which swaps it between two steps. A file that does not load leaves the plant
// on its current policy and is counted once, not once per poll: the next change of the file (say,
// the rest of a non-atomic write) is tried again.
//
// Polling rather than inotify: a deploy by rename(2) replaces the inode a watch would be on, network
// and container file systems often deliver no events at all, and a poll every few seconds costs one
// stat per plant. The stat decides whether to read; the content hash decides whether it changed, so
// a touch or a copy of the same file does not swap anything.

// fileStamp identifies one version of a policy file.
type fileStamp struct {
	path    string
	info    os.FileInfo // for os.SameFile: a rename within the time stamps' granularity is still seen
	size    int64
	modTime time.Time
	sum     [sha256.Size]byte
	// err is why the file could not be read ("" when it was), so that a missing file is reported
	// once rather than on every poll.
	err string
}

// isPolicyFile says whether a plant's policy setting names a file (not classical GBD, not builtin).
func isPolicyFile(spec string) bool {
	return spec != "" && !strings.HasPrefix(spec, configs.BuiltinPrefix)
}

// stampFile reads path's identity. prev, when it is the same file (path and inode) with the same
// size and modification time, is returned unchanged without reading the file.
func stampFile(path string, prev fileStamp) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{path: path, err: err.Error()}
	}
	if prev.err == "" && prev.path == path && prev.info != nil && os.SameFile(prev.info, fi) &&
		prev.size == fi.Size() && prev.modTime.Equal(fi.ModTime()) {
		return prev
	}
	st := fileStamp{path: path, info: fi, size: fi.Size(), modTime: fi.ModTime()}
	f, err := os.Open(path)
	if err != nil {
		st.err = err.Error()
		return st
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		st.err = err.Error()
		return st
	}
	h.Sum(st.sum[:0])
	return st
}

// sameContent says whether two stamps are the same readable content at the same path (size and
// time may differ: a touch, or a copy of the same file).
func (s fileStamp) sameContent(o fileStamp) bool {
	return s.path == o.path && s.err == "" && o.err == "" && s.sum == o.sum
}

// sameFailure says whether two stamps are the same unreadable file, failing the same way.
func (s fileStamp) sameFailure(o fileStamp) bool {
	return s.path == o.path && s.err != "" && s.err == o.err
}

// initialStamps fingerprints every plant's policy file before the policies are loaded at start, so a
// file replaced while the daemon starts is seen as changed at the first poll.
func initialStamps(cfg *configs.Config) map[string]fileStamp {
	st := map[string]fileStamp{}
	for _, p := range cfg.Plants {
		if isPolicyFile(p.Policy) {
			st[p.ID] = stampFile(p.Policy, fileStamp{})
		}
	}
	return st
}

// pollPolicies checks every plant's current policy file once (on the reloader's goroutine, which
// owns r.cur and r.stamps).
func (r *reloader) pollPolicies() {
	for _, l := range r.loops {
		p, ok := r.cur.Plant(l.cfg.ID)
		if !ok || !isPolicyFile(p.Policy) {
			continue
		}
		prev := r.stamps[l.cfg.ID]
		st := stampFile(p.Policy, prev)
		switch {
		case st.sameContent(prev), st.sameFailure(prev):
			r.stamps[l.cfg.ID] = st
			continue
		}
		r.stamps[l.cfg.ID] = st
		log := r.log.With(zap.String("plant", l.cfg.ID), zap.String("policy", p.Policy))
		if st.err != "" {
			r.policyRefused(l.cfg.ID, log, "policy file changed but cannot be read; the plant keeps its current policy",
				errors.New(st.err))
			continue
		}
		lp, err := r.d.Policies(p.Policy, l.cfg.ID, l.family)
		if err != nil {
			r.policyRefused(l.cfg.ID, log, "policy file changed but is refused; the plant keeps its current policy", err)
			continue
		}
		r.m.policyReloads.WithLabelValues(l.cfg.ID, "ok").Inc()
		log.Info("policy file changed: swapping at the next step boundary", zap.String("version", lp.Version))
		offer(l.updates, lp)
	}
}

func (r *reloader) policyRefused(plant string, log *zap.Logger, msg string, err error) {
	r.m.policyReloads.WithLabelValues(plant, "error").Inc()
	r.m.policyReloadErrors.WithLabelValues(plant).Inc()
	log.Error(msg, zap.Error(err))
}

// watchTicks is the poll's wake-up: Deps.PolicyWatchTicks when set (tests), a ticker every
// policy_watch otherwise, or nil (never) when the watch is off. The ticker only wakes the poll up;
// what changed is decided by the file.
func watchTicks(cfg *configs.Config, d Deps) (<-chan time.Time, func()) {
	if d.PolicyWatchTicks != nil {
		return d.PolicyWatchTicks, func() {}
	}
	if cfg.PolicyWatch <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(cfg.PolicyWatch)
	return t.C, t.Stop
}
