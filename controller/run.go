package controller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"gbdmpc/backend"
	"gbdmpc/configs"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/telemetry"
	"gbdmpc/wire"
)

// Deps are the daemon's collaborators. Every field is optional; the zero value runs the real thing
// with a no-op logger and a private registry.
type Deps struct {
	// Logger receives everything the daemon logs (nil: no-op).
	Logger *zap.Logger
	// Level is Logger's level; a reload sets it from log.level (nil: the level cannot be reloaded).
	Level *zap.AtomicLevel
	// Registry receives the daemon's metrics and serves /metrics (nil: a new registry).
	Registry *prometheus.Registry
	// Clock is the source of time for ages, deadlines and timestamps (nil: the wall clock).
	Clock Clock
	// Version is the build version for gbdmpc_build_info.
	Version string

	// Reload receives one value per reload request (SIGHUP); LoadConfig re-reads the configuration
	// for it. Without LoadConfig a reload request is logged and ignored.
	Reload     <-chan struct{}
	LoadConfig func() (*configs.Config, error)

	// Notifier receives sd_notify messages (nil: SystemdNotifier, a no-op outside systemd), and
	// WatchdogInterval is WatchdogSec (0 with a nil Notifier: read from $WATCHDOG_USEC).
	Notifier         Notifier
	WatchdogInterval time.Duration

	// Families, Policies and NewStepper replace how plants are built (nil: registry.Factories,
	// DefaultPolicyLoader, mpc.NewController). Tests use them; the daemon does not need to.
	Families   map[string]registry.Factory
	Policies   PolicyLoader
	NewStepper func(f mpc.Family, o mpc.Options) (Stepper, error)
	// Decisions replaces the decision log configured in decision_log (tests).
	Decisions DecisionSink
	// PolicyWatchTicks replaces the policy_watch ticker (tests): each value is one poll of the
	// plants' policy files, whatever policy_watch says.
	PolicyWatchTicks <-chan time.Time

	// Started, if set, is called once every plant is subscribed (when READY=1 is sent), with the
	// addresses the daemon ended up on.
	Started func(Info)
}

// Info says where a running daemon listens.
type Info struct {
	BrokerURL string // the MQTT broker the plants' sessions use
	HTTPAddr  string // /metrics, /livez, /readyz ("" when http.listen is off)
}

func (d Deps) withDefaults() Deps {
	if d.Logger == nil {
		d.Logger = zap.NewNop()
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if d.Clock == nil {
		d.Clock = gbd.RealClock
	}
	if d.Version == "" {
		d.Version = "devel"
	}
	if d.Notifier == nil {
		d.Notifier = SystemdNotifier{}
		if d.WatchdogInterval == 0 {
			d.WatchdogInterval = SystemdWatchdogInterval()
		}
	}
	if d.Families == nil {
		d.Families = registry.Factories()
	}
	if d.Policies == nil {
		d.Policies = DefaultPolicyLoader
	}
	if d.NewStepper == nil {
		d.NewStepper = func(f mpc.Family, o mpc.Options) (Stepper, error) { return mpc.NewController(f, o) }
	}
	return d
}

// Run is `gbdmpc serve`: it starts the embedded broker (if configured), the decision log, one MQTT
// session and control loop per plant, the HTTP endpoint, the watchdog and the reload handler, and
// serves until ctx is cancelled (clean shutdown, nil error) or one of them fails (its error). Every
// part stops when one stops. Signal handling stays in main: cancel ctx on SIGINT/SIGTERM and send on
// Deps.Reload on SIGHUP.
func Run(ctx context.Context, cfg *configs.Config, deps Deps) (err error) {
	if cfg == nil {
		return errors.New("controller: nil config")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	d := deps.withDefaults()
	log := d.Logger
	log.Info("starting", zap.String("version", d.Version), zap.Any("config", cfg.Redacted()))

	m, err := newMetrics(d.Registry, cfg.Plants, d.Version)
	if err != nil {
		return fmt.Errorf("controller: metrics: %w", err)
	}

	sink := d.Decisions
	if sink == nil && cfg.DecisionLog.Dir != "" {
		dl, err := openDecisionLog(&cfg.DecisionLog, d)
		if err != nil {
			return err
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if cerr := dl.Close(cctx); cerr != nil {
				log.Error("decision log close", zap.Error(cerr))
			}
		}()
		sink = dl
	} else if sink == nil {
		log.Warn("decision_log.dir is empty: master problems are not recorded")
	}

	brokerURL := cfg.Broker.URL
	if cfg.Broker.Embedded {
		b, err := StartEmbeddedBroker(cfg.Broker.Listen, log)
		if err != nil {
			return err
		}
		// Deferred before the loops run, so it closes after they have published offline.
		defer b.Close()
		brokerURL = b.URL()
	}

	wd := newWatchdog(d.Notifier, d.WatchdogInterval, d.Clock, log.Named("watchdog"))
	stamps := initialStamps(cfg)
	loops, err := buildPlants(cfg, d, m, sink, brokerURL, wd)
	if err != nil {
		return err
	}
	wd.loops = loops

	var actors []actor
	info := Info{BrokerURL: brokerURL}
	if cfg.HTTP.Listen != configs.HTTPOff {
		ln, err := net.Listen("tcp", cfg.HTTP.Listen)
		if err != nil {
			return fmt.Errorf("controller: http.listen: %w", err)
		}
		info.HTTPAddr = ln.Addr().String()
		hs := newHTTPServer(ln, d.Registry, loops, d.Clock, log.Named("http"))
		actors = append(actors, actor{"http", hs.run})
	}
	for _, l := range loops {
		actors = append(actors, actor{"plant " + l.cfg.ID, l.run})
	}
	ticks, stopTicks := watchTicks(cfg, d)
	defer stopTicks()
	r := &reloader{cur: cfg, d: d, loops: loops, log: log.Named("reload"), m: m, ticks: ticks, stamps: stamps}
	actors = append(actors,
		actor{"watchdog", wd.run},
		actor{"reload", r.run},
		actor{"readiness", func(ctx context.Context) error {
			for _, l := range loops {
				if l.sess.waitSubscribed(ctx) != nil {
					return nil
				}
			}
			log.Info("ready", zap.String("broker", info.BrokerURL), zap.String("http", info.HTTPAddr), zap.Int("plants", len(loops)))
			if err := d.Notifier.Notify(fmt.Sprintf("READY=1\nSTATUS=serving %d plant(s)", len(loops))); err != nil {
				log.Warn("sd_notify READY", zap.Error(err))
			}
			if d.Started != nil {
				d.Started(info)
			}
			<-ctx.Done()
			return nil
		}},
	)
	err = runActors(ctx, actors)
	_ = d.Notifier.Notify("STOPPING=1")
	if err != nil {
		log.Error("stopped", zap.Error(err))
	} else {
		log.Info("stopped")
	}
	return err
}

func openDecisionLog(c *configs.DecisionLog, d Deps) (*telemetry.DecisionLog, error) {
	fsync := map[string]telemetry.FsyncPolicy{"interval": telemetry.FsyncInterval, "always": telemetry.FsyncAlways, "never": telemetry.FsyncNever}[c.Fsync]
	dl, err := telemetry.Open(c.Dir, telemetry.LogOptions{
		MaxSegmentBytes: int64(c.MaxSegmentMB) << 20, MaxSegmentAge: c.MaxSegmentAge, MaxSegments: c.MaxSegments,
		Compress: c.Compress, QueueSize: c.QueueSize, Fsync: fsync, FsyncEvery: c.FsyncEvery,
	}, d.Logger.Named("decisionlog").With(zap.String("dir", c.Dir)).Sugar(), d.Clock)
	if err != nil {
		return nil, fmt.Errorf("controller: decision log: %w", err)
	}
	if err := registerDecisionLogMetrics(d.Registry, dl); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = dl.Close(cctx)
		return nil, fmt.Errorf("controller: decision log metrics: %w", err)
	}
	return dl, nil
}

// buildPlants makes each plant's family, policy, controller, loop and session. Any failure stops the
// start: a daemon that cannot serve one of its plants as configured should not pretend otherwise.
func buildPlants(cfg *configs.Config, d Deps, m *metrics, sink DecisionSink, brokerURL string, wd *watchdog) ([]*plantLoop, error) {
	runID := randomHex(4)
	ids := make([]string, len(cfg.Plants))
	for i, p := range cfg.Plants {
		ids[i] = p.ID
	}
	loops := make([]*plantLoop, 0, len(cfg.Plants))
	slots := newSolveSlots(runtime.GOMAXPROCS(0))
	// Plants of one family and shape lend each other carried cuts for their first steps, which after
	// a restart all come at once (mpc.Siblings).
	siblings := &mpc.Siblings{}
	for i := range cfg.Plants {
		p := cfg.Plants[i]
		log := d.Logger.With(zap.String("plant", p.ID))
		fail := func(what string, err error) error {
			return fmt.Errorf("controller: plant %s: %s: %w", p.ID, what, err)
		}
		factory, ok := d.Families[p.Family]
		if !ok {
			return nil, fail("family", fmt.Errorf("no family %q in this build", p.Family))
		}
		fam, err := factory(&p)
		if err != nil {
			return nil, fail("family "+p.Family, err)
		}
		pol, err := d.Policies(p.Policy, p.ID, fam)
		if err != nil {
			m.policyReloads.WithLabelValues(p.ID, "error").Inc()
			m.policyReloadErrors.WithLabelValues(p.ID).Inc()
			return nil, fail("policy", err)
		}
		m.policyReloads.WithLabelValues(p.ID, "ok").Inc()
		opts, master := mpcOptions(&p, fam, d.Clock, len(cfg.Plants))
		opts.Siblings = siblings
		var rec *decisionRecorder
		var alarm *decisionAlarm
		if sink != nil {
			rec = &decisionRecorder{sink: sink, clock: d.Clock, plant: p.ID, family: fam.Name(), run: runID}
			opts.Recorder = rec
			if h, ok := sink.(sinkHealth); ok {
				alarm = &decisionAlarm{health: h, seen: h.Dropped(), errsSeen: h.WriteErrors()}
			}
		}
		var loop *plantLoop // the solves' Interrupt asks the loop, made next
		opts.Settings.Interrupt = func() bool { return loop.cutShort() }
		ctl, err := d.NewStepper(fam, opts)
		if err != nil {
			return nil, fail("controller", err)
		}
		l := &plantLoop{
			cfg: p, family: fam, ctl: ctl, slots: slots, rec: rec, clock: d.Clock, log: log,
			m: m, plants: ids, beatEvery: min(time.Second, p.Period), kick: wd.kick, decisions: alarm,
			topic: func(kind string) string { return cfg.Topic(p.ID, kind) },
		}
		if cfg.HA.Enabled() {
			l.ha = newElection(member{cfg.HA.Node, runID}, p.Period, cfg.HA.TakeoverPeriods)
		}
		loop = l
		l.init(pol)
		// Action seq numbers must never repeat, also across restarts: start from the clock in ms
		// (a daemon publishing under 1,000 actions a second stays ahead of it for ever).
		l.core.actionSeq = uint64(d.Clock.Now().UnixMilli())
		will := l.statusWithEpoch(wire.StateOffline, "connection lost", 0)
		l.sess, err = newSession(sessionConfig{
			url: brokerURL, clientID: cfg.Broker.ClientID + "-" + p.ID, broker: &cfg.Broker, plant: p.ID,
			topics: l.topic, will: will, log: log.Named("mqtt"), m: m, ha: l.ha != nil, now: d.Clock.Now,
			status: func() []byte {
				if l.ha != nil {
					return nil // the retained status is the election's
				}
				return l.statusPayload(l.view.Load().state, "")
			},
			onSub: func() { l.subscribedAt.Store(d.Clock.Now().UnixNano()) },
			post:  l.in.post,
			// Whether a rejection's error message is this daemon's to send: the role the loop
			// last showed. At a change of role one error message may go out from both daemons
			// or from neither; no measurement's answer depends on it.
			standby: func() bool { return l.view.Load().standby },
			gate:    newGate(&p, fam, m, log),
			deliver: func(msg inbound) {
				l.lastAccepted.Store(msg.received.UnixNano())
				m.lastMeasurement.WithLabelValues(p.ID).Set(float64(msg.received.UnixNano()) / 1e9)
				if l.in.deliver(msg) {
					m.mailboxDropped.WithLabelValues(p.ID).Inc()
				}
			},
		})
		l.out = l.sess
		if err != nil {
			return nil, fail("mqtt", err)
		}
		ypb := zap.Int("ypb", fam.Admissible().Count())
		if fam.Admissible().Implicit() {
			ypb = zap.String("ypb", fmt.Sprintf("implicit (%d binaries, too many assignments to enumerate)", fam.Admissible().NY))
		}
		log.Info("plant configured", zap.String("family", fam.Name()), zap.String("policy", pol.Version),
			zap.String("master", master), zap.String("cuts", p.Spec.Cuts), ypb, zap.Duration("period", p.Period), zap.Duration("deadline", p.Deadline))
		loops = append(loops, l)
	}
	return loops, nil
}

// mpcOptions are a plant's solver settings, for a daemon serving plants plants, with the name of
// the master back-end that runs (master "auto" resolved on the family's Y_pb). The step's
// deadline caps T_min, T_max and every NLP further (gbd.Budget). The cores are shared out among
// the plants for the re-evaluation of carried cuts, the one part of a step that runs in parallel:
// a lone plant uses them all, several plants step on their own cores.
func mpcOptions(p *configs.Plant, fam mpc.Family, clock Clock, plants int) (mpc.Options, string) {
	o := mpc.Options{
		Settings:     p.Spec.Settings(),
		SafeAfter:    p.SafeAfter,
		CarryWorkers: max(1, runtime.GOMAXPROCS(0)/max(plants, 1)),
	}
	if clock != nil {
		o.Clock = clock
	}
	// Validate has already refused unknown names, so an error cannot happen here.
	newMaster, master, err := backend.MasterFor(p.Master, fam.Admissible())
	if err == nil {
		o.NewMaster = newMaster
	}
	if newNLP, err := backend.NLPByName(p.NLP); err == nil {
		o.NLP = newNLP() // one per plant loop: a native solver serves one goroutine
	}
	return o, master
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewLogger is the daemon's logger for log.level and log.format, with its level returned so that
// Deps.Level can change it on reload. It wraps newBaseLogger (built at debug) in a core that
// filters at the atomic level, so the format stays telemetry's.
func NewLogger(c configs.Log) (*zap.Logger, *zap.AtomicLevel, error) {
	lvl, err := zap.ParseAtomicLevel(c.Level)
	if err != nil {
		return nil, nil, fmt.Errorf("log.level: %w", err)
	}
	base, err := newBaseLogger(c.Format != "console", "debug")
	if err != nil {
		return nil, nil, err
	}
	var werr error
	l := base.WithOptions(zap.WrapCore(func(core zapcore.Core) zapcore.Core {
		filtered, err := zapcore.NewIncreaseLevelCore(core, lvl)
		if err != nil {
			werr = err
			return core
		}
		return filtered
	}))
	if werr != nil {
		return nil, nil, werr
	}
	return l, &lvl, nil
}
