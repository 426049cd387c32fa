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
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/wire"
)

// session is one plant's MQTT connection. Each plant gets its own because MQTT allows one Last Will
// per connection and the contract makes every plant's status topic a Last Will.
//
// # One paho client per connection
//
// The session makes a new paho client for every connection (run) instead of letting paho reconnect
// its client: a reconnecting paho client re-sends the QoS 1 publishes still in its store, and an
// action queued into a dead connection would then reach the plant after the daemon lost the plant
// to another one, or after its deadline. With a client per connection, whatever was published on a
// connection lives and dies with it: paho completes its tokens with an error when it is lost, and
// the next connection starts from an empty store. The same client ID is used each time, so the
// broker sees one session reconnecting.
//
// paho runs the connect handler and the message callback on its own goroutines. The message
// callback judges measurements (gate.go) and hands valid ones, and every status message and peer
// action, to the plant loop as events in arrival order (events.go); the connect handler subscribes
// and says so the same way. Neither reads or writes plant state, and neither takes a lock: the
// plant's state, the HA election included, is the plant loop's.
type session struct {
	sessionConfig
	tls *tls.Config

	measurementTopic, statusTopic, actionTopic, errorTopic string

	cur        atomic.Pointer[mqttConn] // the connection being made or in use
	mu         sync.Mutex               // orders run's new clients against stop
	stopped    bool
	connected  atomic.Bool
	everUp     atomic.Bool
	subscribed chan struct{} // closed after the first successful subscription
	subOnce    atomic.Bool
	subErr     atomic.Value // last subscription error (error), for logs and readiness
	// connErr is the last connection failure's text: a new reason is logged at error level, a
	// repeat (every retry interval) only at debug, so a refused login is visible without flooding.
	connErr  atomic.Value
	done     chan struct{} // closed by stop
	stopOnce sync.Once
	runDone  chan struct{}
	// errOut carries encoded error messages from the gate to publishErrors.
	errOut  chan []byte
	errDone chan struct{}
}

// mqttConn is one connection: its own paho client, numbered in the order the session made them.
type mqttConn struct {
	client   mqtt.Client
	gen      uint64
	lost     chan struct{}
	lostOnce atomic.Bool
}

// sessionConfig is what a session is made of; the session keeps it as it is.
type sessionConfig struct {
	plant    string
	log      *zap.Logger
	m        *metrics
	url      string
	clientID string
	broker   *configs.Broker
	topics   func(kind string) string
	will     []byte
	// status builds the retained status to publish on (re)connection, from the loop's current
	// state. Only a daemon without HA republishes it: an HA daemon's claims are the election's.
	status func() []byte
	// gate judges measurements on arrival; deliver hands a valid one to the plant loop and must
	// not block; post hands the loop a control event (it waits for room, never drops).
	gate    *gate
	deliver func(inbound)
	post    func(event)
	// standby reports whether the plant loop last showed this daemon as an HA standby, whose
	// rejections send no error message.
	standby func() bool
	// ha: the daemon is in an HA group, so the session also follows the plant's action topic;
	// now is the daemon's clock.
	ha  bool
	now func() time.Time
	// onSub runs once, after the first successful subscription and before waitSubscribed
	// returns.
	onSub func()
}

// errQueue bounds the error messages waiting for the publisher; the gate's rate limit keeps it
// short unless the connection stalls.
const errQueue = 64

func newSession(sc sessionConfig) (*session, error) {
	s := &session{
		sessionConfig:    sc,
		measurementTopic: sc.topics("measurement"), statusTopic: sc.topics("status"), actionTopic: sc.topics("action"),
		errorTopic: sc.topics("error"),
		subscribed: make(chan struct{}), done: make(chan struct{}), runDone: make(chan struct{}),
		errOut: make(chan []byte, errQueue), errDone: make(chan struct{}),
	}
	if s.gate != nil {
		s.gate.send = s.queueError
	}
	if u, err := url.Parse(sc.url); err == nil && configs.TLSScheme(u.Scheme) {
		tc, err := tlsConfig(&sc.broker.TLS)
		if err != nil {
			return nil, err
		}
		s.tls = tc
	}
	return s, nil
}

// newClient makes the paho client of one connection. It neither reconnects nor retries by itself
// (run does both), and its handlers know which connection they belong to.
func (s *session) newClient(cn *mqttConn) mqtt.Client {
	b := s.broker
	o := mqtt.NewClientOptions().
		AddBroker(s.url).
		SetClientID(s.clientID).
		SetCleanSession(true). // the subscription is renewed in onConnect, so no broker state is relied on
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetKeepAlive(b.KeepAlive).
		SetConnectTimeout(b.ConnectTimeout).
		SetWriteTimeout(b.ConnectTimeout).
		SetOrderMatters(true). // the callback judges in microseconds and never blocks
		SetBinaryWill(s.statusTopic, s.will, 1, true).
		SetOnConnectHandler(func(mqtt.Client) { s.onConnect(cn) }).
		SetConnectionLostHandler(func(_ mqtt.Client, err error) { s.onLost(cn, err) }).
		// paho reports refusals (bad credentials, an untrusted certificate) only to its own
		// loggers; this puts the reason in ours.
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
	if s.tls != nil {
		o.SetTLSConfig(s.tls)
	}
	return mqtt.NewClient(o)
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

// start begins connecting in the background and keeps a connection until stop.
func (s *session) start() {
	go s.run()
	go s.publishErrors()
}

// minRetry is the first wait before another connection attempt (capped by max_reconnect_interval);
// a connection that lasted less than stableAfter counts as a failed attempt, so a broker that
// accepts and drops at once is not hammered.
const (
	minRetry    = time.Second
	stableAfter = 3 * time.Second
)

// run connects, waits for the connection to be lost, and connects again with a new client, backing
// off from minRetry to max_reconnect_interval while attempts fail, until stop.
func (s *session) run() {
	defer close(s.runDone)
	first := min(minRetry, s.broker.MaxReconnectInterval)
	wait := first
	for gen := uint64(1); ; gen++ {
		cn := &mqttConn{gen: gen, lost: make(chan struct{})}
		cn.client = s.newClient(cn)
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		s.cur.Store(cn)
		tok := cn.client.Connect() // under mu, so stop's Disconnect comes after it, never before
		s.mu.Unlock()
		select {
		case <-tok.Done():
		case <-s.done:
			return
		}
		if tok.Error() == nil {
			up := time.Now()
			select {
			case <-cn.lost:
			case <-s.done:
				return
			}
			if time.Since(up) >= stableAfter {
				wait = first
				continue // reconnect at once
			}
		}
		if !sleep(wait, s.done, nil) {
			return
		}
		wait = min(2*wait, max(s.broker.MaxReconnectInterval, first))
	}
}

func (s *session) onConnect(cn *mqttConn) {
	if s.cur.Load() != cn {
		return
	}
	if s.everUp.Swap(true) {
		s.m.reconnects.WithLabelValues(s.plant).Inc()
		s.log.Info("mqtt reconnected", zap.Uint64("connection", cn.gen))
	} else {
		s.log.Info("mqtt connected")
	}
	// Before subscribing, so that the loop sees the connection before anything that arrives on it.
	s.post(event{kind: evConnected, conn: cn, at: s.now()})
	s.connected.Store(true)
	s.m.connected.WithLabelValues(s.plant).Set(1)
	c := cn.client
	// A clean session starts with no subscription: subscribe again on every connection. A refused
	// subscription (an ACL, say) leaves the plant deaf, so keep trying while the connection lasts.
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		topics := map[string]byte{s.measurementTopic: 1, s.statusTopic: 1}
		if s.ha {
			topics[s.actionTopic] = 1 // the active daemon's actions: its liveness and last plan
		}
		tok := c.SubscribeMultiple(topics, func(_ mqtt.Client, msg mqtt.Message) { s.route(cn, msg) })
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
		if !sleep(wait, s.done, cn.lost) {
			return // stopping, or the next connection's handler subscribes
		}
	}
	// Without HA, overwrite the Last Will's "offline" that a previous connection's loss may have
	// left retained, and wait for it, so that once the daemon reports ready the retained status is
	// right. An HA daemon leaves the status topic to the election.
	if !s.ha {
		if st := s.status(); st != nil {
			if tok := c.Publish(s.statusTopic, 1, true, st); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				s.log.Warn("mqtt status not acknowledged", zap.Error(tok.Error()))
			}
		}
	}
	if s.subOnce.CompareAndSwap(false, true) {
		if s.onSub != nil {
			s.onSub()
		}
		s.post(event{kind: evSubscribed, at: s.now()})
		close(s.subscribed)
	}
}

// route dispatches the session's subscriptions: a measurement is judged on arrival (gate.go) and
// only a valid one goes to the plant loop; a status message (a claim, an offline) and, with HA,
// another daemon's action go to the loop as they are. The loop folds them in this order (events.go).
func (s *session) route(cn *mqttConn, msg mqtt.Message) {
	switch msg.Topic() {
	case s.measurementTopic:
		s.arrive(cn, msg.Payload())
	case s.statusTopic:
		if c, ok := parseClaim(msg.Payload()); ok {
			s.post(event{kind: evStatus, conn: cn, claim: c, at: s.now()})
		}
	case s.actionTopic: // subscribed with HA only
		a := new(wire.Action)
		if s.ha && json.Unmarshal(msg.Payload(), a) == nil {
			s.post(event{kind: evAction, conn: cn, action: a, at: s.now()})
		}
	}
}

// arrive judges one measurement (gate.go) and hands a valid one to the plant loop.
func (s *session) arrive(cn *mqttConn, payload []byte) {
	now := s.now()
	meas, env, rej := s.gate.judge(payload, now)
	if rej != nil {
		s.gate.refuse(rej, now, s.standby != nil && s.standby())
		return
	}
	s.gate.accept(env.Seq)
	s.deliver(inbound{meas: meas, env: env, received: now, conn: cn})
}

// queueError hands an encoded error message to publishErrors without blocking.
func (s *session) queueError(b []byte) bool {
	select {
	case s.errOut <- b:
		return true
	default:
		return false
	}
}

// publishErrors publishes the gate's error messages (QoS 0) until stop; paho may block a publish
// while a connection stalls, which must never hold up the message callback.
func (s *session) publishErrors() {
	defer close(s.errDone)
	for {
		select {
		case <-s.done:
			return
		case b := <-s.errOut:
			tok := s.publish(s.errorTopic, 0, false, b)
			if tok.WaitTimeout(s.broker.ConnectTimeout) && tok.Error() != nil {
				s.m.publishFailures.WithLabelValues(s.plant, "error").Inc()
			}
		}
	}
}

func (s *session) onLost(cn *mqttConn, err error) {
	if cn.lostOnce.CompareAndSwap(false, true) {
		close(cn.lost)
	}
	if s.cur.Load() != cn {
		return
	}
	s.connected.Store(false)
	s.m.connected.WithLabelValues(s.plant).Set(0)
	s.log.Warn("mqtt connection lost; reconnecting with a new client", zap.Error(err), zap.Uint64("connection", cn.gen))
}

// Connected reports whether the session is up (and so subscribed, since a failed subscription
// drops the connection).
func (s *session) Connected() bool {
	cn := s.cur.Load()
	return s.connected.Load() && cn != nil && cn.client.IsConnectionOpen()
}

// current is the connection in use (nil before the first attempt).
func (s *session) current() *mqttConn { return s.cur.Load() }

// alive reports whether cn is the connection in use and still open.
func (s *session) alive(cn *mqttConn) bool {
	if cn == nil || cn != s.cur.Load() {
		return false
	}
	select {
	case <-cn.lost:
		return false
	default:
		return cn.client.IsConnectionOpen()
	}
}

// waitSubscribed blocks until the first subscription succeeded or ctx ends.
func (s *session) waitSubscribed(ctx context.Context) error {
	select {
	case <-s.subscribed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errNoConnection is a publish's error when its connection is not the one in use.
var errNoConnection = errors.New("mqtt: the connection is gone")

// doneToken is an mqtt.Token that has already failed.
type doneToken struct{ err error }

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (t doneToken) Wait() bool                     { return true }
func (t doneToken) WaitTimeout(time.Duration) bool { return true }
func (t doneToken) Done() <-chan struct{}          { return closedCh }
func (t doneToken) Error() error                   { return t.err }

// publish hands a message to the connection in use without waiting for the broker: the plant loop
// checks the token later (pending), so a slow broker never delays the next step. Between
// connections it fails at once: nothing is kept to be sent later.
func (s *session) publish(topic string, qos byte, retained bool, payload []byte) mqtt.Token {
	return s.publishOn(s.cur.Load(), topic, qos, retained, payload)
}

// publishOn publishes on connection cn only, and fails if cn is no longer the one in use: an HA
// daemon's action goes out on the connection its measurement came in on, or not at all.
func (s *session) publishOn(cn *mqttConn, topic string, qos byte, retained bool, payload []byte) mqtt.Token {
	if !s.alive(cn) {
		return doneToken{errNoConnection}
	}
	return cn.client.Publish(topic, qos, retained, payload)
}

// stop publishes offline (retained) while still connected, then disconnects; a clean DISCONNECT
// suppresses the Last Will, so this publish is what tells subscribers the plant lost its controller.
// An HA standby passes nil: the plant did not lose its (active) controller.
func (s *session) stop(offline []byte, wait time.Duration) {
	s.mu.Lock()
	s.stopped = true
	cn := s.cur.Load()
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.done) })
	if cn != nil {
		if offline != nil && cn.client.IsConnectionOpen() {
			tok := cn.client.Publish(s.statusTopic, 1, true, offline)
			if !tok.WaitTimeout(wait) || tok.Error() != nil {
				s.log.Warn("mqtt offline status not acknowledged", zap.Error(tok.Error()))
			}
		}
		cn.client.Disconnect(250)
	}
	<-s.runDone
	<-s.errDone
	s.connected.Store(false)
	s.m.connected.WithLabelValues(s.plant).Set(0)
}

// sleep waits for d and reports true, or false as soon as stop or also (nil: never) is closed.
func sleep(d time.Duration, stop, also <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-also:
		return false
	case <-t.C:
		return true
	}
}

// localAddr matches "tcp 127.0.0.1:47704->" in a dial or read error: the local port changes with
// every attempt, so it is left out when telling a new reason from a repeat.
var localAddr = regexp.MustCompile(`(tcp) [^ ]+->`)

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
	// without the prefix, so a repeat is a repeat. The logger carries the plant already.
	msg := localAddr.ReplaceAllString(strings.TrimPrefix(reason.Error(), "network Error : "), "$1")
	if prev, _ := s.connErr.Swap(msg).(string); prev == msg {
		s.log.Debug("mqtt connection failed again", zap.Error(reason))
		return
	}
	s.log.Error("mqtt connection failed", zap.Error(reason))
}
