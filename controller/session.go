package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap"

	"gbdmpc/configs"
)

// session is one plant's MQTT connection. Each plant gets its own because MQTT allows one Last Will
// per connection and the contract makes every plant's status topic a Last Will.
//
// paho runs the connect handler and the message callback on its own goroutines; both only touch
// atomics, the mailbox and paho itself, so the plant loop remains the one owner of plant state.
type session struct {
	plant  string
	client mqtt.Client
	log    *zap.Logger
	m      *metrics

	measurementTopic, statusTopic, actionTopic string
	// status builds the retained status to publish on (re)connection, from the loop's current
	// state; nil when this daemon is an HA standby, which leaves the status topic to the active one.
	status func() []byte
	// deliver hands a payload to the plant loop; it must not block. standby tags a measurement
	// that arrived while another daemon of the HA group was active.
	deliver func(payload []byte, standby bool, gen uint64)
	// ha is the plant's active/standby election (nil without HA); haWake tells the plant loop
	// that it changed; now is the daemon's clock.
	ha     *election
	haWake func()
	now    func() time.Time
	// staleStatus asks the plant loop to republish its status; it must not block.
	staleStatus func()
	// onSubscribed runs once, after the first successful subscription and before waitSubscribed
	// returns.
	onSubscribed func()

	// gen counts lost connections. An HA daemon tags each measurement with it, and withholds an
	// action when the connection the measurement came on was lost before the action could go
	// out (ha.go, "Lost connections").
	gen        atomic.Uint64
	connected  atomic.Bool
	everUp     atomic.Bool
	subscribed chan struct{} // closed after the first successful subscription
	subOnce    sync.Once
	subErr     atomic.Value // last subscription error (error), for logs and readiness
	// connErr is the last connection failure's text: a new reason is logged at error level, a
	// repeat (every retry interval) only at debug, so a refused login is visible without flooding.
	connErr  atomic.Value
	done     chan struct{} // closed by stop: ends a subscription retry loop
	stopOnce sync.Once
}

type sessionConfig struct {
	url      string
	clientID string
	broker   *configs.Broker
	plant    string
	topics   func(kind string) string
	will     []byte
	status   func() []byte
	deliver  func(payload []byte, standby bool, gen uint64)
	ha       *election
	haWake   func()
	now      func() time.Time
	onSub    func()
	stale    func()
	log      *zap.Logger
	m        *metrics
}

func newSession(sc sessionConfig) (*session, error) {
	s := &session{
		plant: sc.plant, log: sc.log, m: sc.m,
		measurementTopic: sc.topics("measurement"), statusTopic: sc.topics("status"), actionTopic: sc.topics("action"),
		ha: sc.ha, haWake: sc.haWake, now: sc.now,
		status: sc.status, deliver: sc.deliver, onSubscribed: sc.onSub, staleStatus: sc.stale, subscribed: make(chan struct{}), done: make(chan struct{}),
	}
	b := sc.broker
	o := mqtt.NewClientOptions().
		AddBroker(sc.url).
		SetClientID(sc.clientID).
		SetCleanSession(true). // the subscription is renewed in onConnect, so no broker state is relied on
		SetAutoReconnect(true).
		SetConnectRetry(true). // start even if the broker is not up yet; readiness says when it is
		SetConnectRetryInterval(time.Second).
		SetMaxReconnectInterval(b.MaxReconnectInterval).
		SetKeepAlive(b.KeepAlive).
		SetConnectTimeout(b.ConnectTimeout).
		SetWriteTimeout(b.ConnectTimeout).
		SetOrderMatters(true). // the callback only copies into the mailbox, so ordering costs nothing
		SetBinaryWill(s.statusTopic, sc.will, 1, true).
		SetOnConnectHandler(s.onConnect).
		SetConnectionLostHandler(s.onLost).
		// With ConnectRetry paho reports refusals (bad credentials, an untrusted certificate) only
		// to its own loggers; this puts the reason in ours.
		SetConnectionNotificationHandler(s.onNotification).
		SetConnectionAttemptHandler(func(broker *url.URL, cfg *tls.Config) *tls.Config {
			s.log.Debug("mqtt connecting", zap.String("broker", broker.Redacted()))
			return cfg
		})
	if b.Username != "" {
		o.SetUsername(b.Username)
		// Read the password at every connection attempt, so a rotated password file takes effect
		// on the next reconnect without a restart.
		o.SetCredentialsProvider(func() (string, string) {
			pw, err := b.ResolvePassword()
			if err != nil {
				s.log.Error("mqtt password", zap.Error(err))
			}
			return b.Username, pw
		})
	}
	if u, err := url.Parse(sc.url); err == nil && configs.TLSScheme(u.Scheme) {
		tc, err := tlsConfig(&b.TLS)
		if err != nil {
			return nil, err
		}
		o.SetTLSConfig(tc)
	}
	s.client = mqtt.NewClient(o)
	return s, nil
}

// tlsConfig builds the client TLS configuration: the system roots plus the configured CA, and the
// client certificate when one is configured.
func tlsConfig(t *configs.TLS) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // opt-in, documented as lab-only
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("broker.tls.ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("broker.tls.ca_file %s: no PEM certificate found", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("broker.tls client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// start begins connecting in the background; paho retries until stop.
func (s *session) start() { s.client.Connect() }

func (s *session) onConnect(c mqtt.Client) {
	if s.everUp.Swap(true) {
		s.m.reconnects.WithLabelValues(s.plant).Inc()
		s.log.Info("mqtt reconnected")
	} else {
		s.log.Info("mqtt connected")
	}
	s.connected.Store(true)
	s.m.connected.WithLabelValues(s.plant).Set(1)
	// A clean session starts with no subscription: subscribe again on every connection. A refused
	// subscription (an ACL, say) leaves the plant deaf, so keep trying while the connection lasts.
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		topics := map[string]byte{s.measurementTopic: 1, s.statusTopic: 1}
		if s.ha != nil {
			topics[s.actionTopic] = 1 // the active daemon's actions: its liveness and last plan
		}
		tok := c.SubscribeMultiple(topics, s.route)
		ok := tok.WaitTimeout(30*time.Second) && tok.Error() == nil
		if ok {
			break
		}
		err := tok.Error()
		if err == nil {
			err = errors.New("no SUBACK within 30s")
		}
		s.subErr.Store(err)
		s.log.Error("mqtt subscribe failed", zap.String("topic", s.measurementTopic), zap.Error(err), zap.Duration("retry_in", wait))
		t := time.NewTimer(wait)
		select {
		case <-s.done:
			t.Stop()
			return
		case <-t.C:
		}
		if !c.IsConnectionOpen() {
			return // the next connection's handler subscribes
		}
	}
	// Overwrite the Last Will's "offline" that a previous connection's loss may have left retained,
	// and wait for it, so that once the daemon reports ready the retained status is right. An HA
	// standby publishes nothing there.
	if st := s.status(); st != nil {
		if tok := c.Publish(s.statusTopic, 1, true, st); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			s.log.Warn("mqtt status not acknowledged", zap.Error(tok.Error()))
		}
	}
	s.subOnce.Do(func() {
		if s.onSubscribed != nil {
			s.onSubscribed()
		}
		close(s.subscribed)
	})
}

// route dispatches the session's two subscriptions. Measurements go to the plant loop. The plant's
// own status topic is watched because a broker may deliver the Last Will of a connection it has
// only just noticed is dead after this session reconnected and published online; seeing "offline"
// while connected, the session republishes its real state, so the retained status heals itself.
//
// With HA the callback also runs the election (ha.go): status messages are folded into it, the
// other daemons' actions are noted, and each measurement is tagged with this daemon's role at the
// moment it arrived, which is the same point of the broker's order for every daemon of the group.
func (s *session) route(_ mqtt.Client, msg mqtt.Message) {
	switch msg.Topic() {
	case s.measurementTopic:
		s.deliver(msg.Payload(), s.ha != nil && !s.ha.active(), s.gen.Load())
	case s.statusTopic:
		c, ok := parseClaim(msg.Payload())
		if !ok {
			return
		}
		heal := c.offline // without HA: any offline while connected is stale
		if s.ha != nil {
			was, is := s.ha.observe(c, s.now())
			if was != is || c.offline {
				s.haWake()
			}
			heal = s.ha.heal(c)
		}
		select {
		case <-s.done: // stopping: our own offline comes back
			return
		default:
		}
		// paho forbids publishing from a message callback (it may block the router), so the plant
		// loop does it.
		if heal && s.client.IsConnectionOpen() && s.staleStatus != nil {
			s.log.Info("retained status is not this daemon's; republishing", zap.Stringer("seen", c.who), zap.Bool("seen_offline", c.offline))
			s.staleStatus()
		}
	case s.actionTopic: // subscribed with HA only
		var a Action
		if s.ha == nil || json.Unmarshal(msg.Payload(), &a) != nil {
			return
		}
		if s.ha.observeAction(&a, s.now()) {
			s.m.haForeignActions.WithLabelValues(s.plant).Inc()
			s.log.Error("another daemon answered a measurement while this one is active", zap.String("node", a.Node),
				zap.Uint64("measurement_seq", a.MeasurementSeq))
		}
	}
}

func (s *session) onLost(_ mqtt.Client, err error) {
	s.gen.Add(1)
	s.connected.Store(false)
	s.m.connected.WithLabelValues(s.plant).Set(0)
	s.log.Warn("mqtt connection lost; reconnecting", zap.Error(err))
}

// Connected reports whether the session is up (and so subscribed, since a failed subscription
// drops the connection).
func (s *session) Connected() bool { return s.connected.Load() && s.client.IsConnectionOpen() }

// waitSubscribed blocks until the first subscription succeeded or ctx ends.
func (s *session) waitSubscribed(ctx context.Context) error {
	select {
	case <-s.subscribed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// publish hands a message to paho without waiting for the broker: the plant loop checks the token
// later (pending), so a slow broker never delays the next step.
func (s *session) publish(topic string, qos byte, retained bool, payload []byte) mqtt.Token {
	return s.client.Publish(topic, qos, retained, payload)
}

// stop publishes offline (retained) while still connected, then disconnects; a clean DISCONNECT
// suppresses the Last Will, so this publish is what tells subscribers the plant lost its controller.
// An HA standby passes nil: the plant did not lose its (active) controller.
func (s *session) stop(offline []byte, wait time.Duration) {
	s.stopOnce.Do(func() { close(s.done) })
	if offline != nil && s.client.IsConnectionOpen() {
		tok := s.client.Publish(s.statusTopic, 1, true, offline)
		if !tok.WaitTimeout(wait) || tok.Error() != nil {
			s.log.Warn("mqtt offline status not acknowledged", zap.Error(tok.Error()))
		}
	}
	s.client.Disconnect(250)
	s.connected.Store(false)
	s.m.connected.WithLabelValues(s.plant).Set(0)
}

// onNotification logs why a connection attempt failed.
func (s *session) onNotification(_ mqtt.Client, n mqtt.ConnectionNotification) {
	var reason error
	switch n := n.(type) {
	case mqtt.ConnectionNotificationFailed:
		reason = n.Reason
	case mqtt.ConnectionNotificationBrokerFailed:
		reason = n.Reason
	default:
		return
	}
	if reason == nil {
		return
	}
	// paho reports a failed dial twice, the second time as "network Error : <the same>": compare
	// without the prefix, so a repeat is a repeat.
	msg := strings.TrimPrefix(reason.Error(), "network Error : ")
	if prev, _ := s.connErr.Swap(msg).(string); prev == msg {
		s.log.Debug("mqtt connection failed again", zap.String("plant", s.plant), zap.Error(reason))
		return
	}
	s.log.Error("mqtt connection failed", zap.String("plant", s.plant), zap.Error(reason))
}
