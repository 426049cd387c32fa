package controller

import (
	"context"
	"reflect"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"gbdmpc/configs"
)

// reloader applies a re-read configuration on SIGHUP. The new configuration is validated first (by
// LoadConfig, and again here); on any error the running one is kept whole. What can change live is
// applied — the log level and every plant's policy (re-read even when its path is unchanged, since
// replacing the file in place is the usual way to deploy a retrained agent) — and everything else
// that differs is logged as needing a restart. The same goroutine polls the policy files
// (watch.go), so the two never race over which policy a plant should have.
type reloader struct {
	cur   *configs.Config
	d     Deps
	loops []*plantLoop
	log   *zap.Logger
	m     *metrics

	// ticks wakes the policy watch (nil: off); stamps is each plant's policy file as last loaded or
	// refused.
	ticks  <-chan time.Time
	stamps map[string]fileStamp
}

func (r *reloader) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.ticks:
			r.pollPolicies()
		case _, ok := <-r.d.Reload:
			if !ok {
				<-ctx.Done()
				return nil
			}
			r.reload()
		}
	}
}

func (r *reloader) reload() {
	if r.d.LoadConfig == nil {
		r.log.Warn("reload requested but no configuration source: ignored")
		return
	}
	next, err := r.d.LoadConfig()
	if err == nil {
		err = next.Validate()
	}
	if err != nil {
		r.log.Error("reload: configuration refused; keeping the running one", zap.Error(err))
		return
	}
	r.log.Info("reloading", zap.Any("config", next.Redacted()))

	if r.d.Level != nil && next.Log.Level != r.cur.Log.Level {
		if lvl, err := zapcore.ParseLevel(next.Log.Level); err == nil {
			r.d.Level.SetLevel(lvl)
			r.log.Info("log level changed", zap.String("level", next.Log.Level))
		}
	}
	r.warnRestart(next)

	// Policies: load every one first, then swap, so a reload either changes all plants it can or
	// reports per plant which one it could not.
	applied := slices.Clone(r.cur.Plants)
	for _, l := range r.loops {
		np, ok := next.Plant(l.cfg.ID)
		if !ok {
			continue
		}
		// Stamped before the load, so that a file replaced meanwhile is seen as changed by the watch.
		var st fileStamp
		if isPolicyFile(np.Policy) {
			st = stampFile(np.Policy, fileStamp{})
		}
		p, err := r.d.Policies(np.Policy, l.cfg.ID, l.family)
		if err != nil {
			r.m.policyReloads.WithLabelValues(l.cfg.ID, "error").Inc()
			r.m.policyReloadErrors.WithLabelValues(l.cfg.ID).Inc()
			r.log.Error("reload: policy refused; the plant keeps its current one", zap.String("plant", l.cfg.ID),
				zap.String("policy", np.Policy), zap.Error(err))
			if cp, _ := r.cur.Plant(l.cfg.ID); cp.Policy == np.Policy && isPolicyFile(np.Policy) {
				r.stamps[l.cfg.ID] = st // already refused: the watch need not refuse it again
			}
			continue
		}
		r.m.policyReloads.WithLabelValues(l.cfg.ID, "ok").Inc()
		offer(l.updates, p)
		if isPolicyFile(np.Policy) {
			r.stamps[l.cfg.ID] = st
		} else {
			delete(r.stamps, l.cfg.ID)
		}
		for i := range applied {
			if applied[i].ID == l.cfg.ID {
				applied[i].Policy = np.Policy
			}
		}
	}
	kept := *r.cur
	kept.Log.Level = next.Log.Level
	kept.Plants = applied
	r.cur = &kept
	if err := r.d.Notifier.Notify("STATUS=configuration reloaded"); err != nil {
		r.log.Debug("sd_notify STATUS", zap.Error(err))
	}
}

// offer hands the newest policy to a loop, replacing one it has not taken yet.
func offer(ch chan LoadedPolicy, p LoadedPolicy) {
	for {
		select {
		case ch <- p:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

// warnRestart names the settings that differ but only take effect at the next start.
func (r *reloader) warnRestart(next *configs.Config) {
	cur := r.cur
	restart := func(key string) { r.log.Warn("reload: change needs a restart to take effect", zap.String("key", key)) }
	if !reflect.DeepEqual(cur.Broker, next.Broker) && !onlyClientIDDiffers(cur.Broker, next.Broker) {
		restart("broker")
	}
	if cur.TopicPrefix != next.TopicPrefix {
		restart("topic_prefix")
	}
	if cur.HTTP != next.HTTP {
		restart("http")
	}
	if cur.Log.Format != next.Log.Format {
		restart("log.format")
	}
	if cur.DecisionLog != next.DecisionLog {
		restart("decision_log")
	}
	if cur.HA != next.HA {
		restart("ha")
	}
	if cur.PolicyWatch != next.PolicyWatch {
		restart("policy_watch")
	}
	for _, np := range next.Plants {
		cp, ok := cur.Plant(np.ID)
		if !ok {
			restart("plants (added " + np.ID + ")")
			continue
		}
		np.Policy, cp.Policy = "", ""
		if !reflect.DeepEqual(cp, np) {
			restart("plants (" + np.ID + ")")
		}
	}
	for _, cp := range cur.Plants {
		if _, ok := next.Plant(cp.ID); !ok {
			restart("plants (removed " + cp.ID + ")")
		}
	}
}

// onlyClientIDDiffers: a default client id is random per load, so a re-read config always differs
// there unless the id is configured.
func onlyClientIDDiffers(a, b configs.Broker) bool {
	a.ClientID, b.ClientID = "", ""
	return reflect.DeepEqual(a, b)
}
