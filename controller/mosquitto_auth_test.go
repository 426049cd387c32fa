package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
	"gbdmpc/wire"
)

const mosquittoPasswdBin = "/usr/bin/mosquitto_passwd"

// shippedACL is the example ACL shipped with the unit (daemon account gbdmpc, plant account pump1 for
// plant id pump1, monitor reading gbdmpc/#), so the test checks the file operators copy. The test
// adds an observer that reads every topic, to see denied publishes outside the prefix too.
const shippedACL = "../systemd/mosquitto-acl.conf"

func authACL(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(shippedACL)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, "\nuser observer\ntopic read #\n"...)
}

// startSecureMosquitto runs mosquitto with a TLS listener (server certificate from a fresh test CA,
// no client certificate required), a password file written by mosquitto_passwd and authACL.
func startSecureMosquitto(t *testing.T, passwords map[string]string) (m *testsupport.Mosquitto, caFile string) {
	t.Helper()
	if _, err := os.Stat(testsupport.MosquittoBin); err != nil {
		t.Skipf("mosquitto not installed at %s: %v", testsupport.MosquittoBin, err)
	}
	if _, err := os.Stat(mosquittoPasswdBin); err != nil {
		t.Skipf("mosquitto_passwd not installed at %s: %v", mosquittoPasswdBin, err)
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := serverCert(t, dir)
	pwFile := filepath.Join(dir, "passwd")
	create := "-c"
	for u, pw := range passwords {
		args := []string{"-b", pwFile, u, pw}
		if create != "" {
			args = append([]string{create}, args...)
			create = ""
		}
		if out, err := exec.Command(mosquittoPasswdBin, args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v\n%s", err, out)
		}
	}
	aclFile := filepath.Join(dir, "acl")
	writePrivate(t, aclFile, authACL(t))

	port := testsupport.FreePort(t)
	conf := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("per_listener_settings false\nallow_anonymous false\npassword_file %s\nacl_file %s\npersistence false\nlog_dest none\n"+
		"listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\nrequire_certificate false\ntls_version tlsv1.2\n",
		pwFile, aclFile, port, caFile, certFile, keyFile)
	// As root, mosquitto drops to the "mosquitto" user, which cannot read a test's private directory.
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		body = "user root\n" + body
	}
	writePrivate(t, conf, []byte(body))
	m = testsupport.ConfiguredMosquitto(t, port, conf)
	m.Start()
	return m, caFile
}

func sslURL(m *testsupport.Mosquitto) string { return fmt.Sprintf("ssl://127.0.0.1:%d", m.Port) }

// publishesPastACL has c publish on each topic in denied and then on allowed, and returns the
// denied topics whose publish the observer (messages on seen) received before the allowed one,
// which marks the point by which they would have arrived. It fails the test if the allowed
// publish never arrives.
func publishesPastACL(t *testing.T, c mqtt.Client, seen <-chan received, denied []string, allowed string) (leaked []string) {
	t.Helper()
	for _, topic := range denied {
		c.Publish(topic, 1, false, []byte(`{"denied":true}`)).WaitTimeout(5 * time.Second)
	}
	marker := fmt.Appendf(nil, `{"v":1,"marker":%q}`, randomHex(4))
	c.Publish(allowed, 1, false, marker).WaitTimeout(5 * time.Second)
	if _, ok := awaitTopic(t, seen, 10*time.Second, func(m received) bool {
		if strings.Contains(string(m.payload), `"denied"`) {
			leaked = append(leaked, m.topic)
		}
		return string(m.payload) == string(marker)
	}); !ok {
		t.Fatalf("the allowed publish on %s did not arrive", allowed)
	}
	return leaked
}

// plantClosesLoop is plant pump1 (subscribed to its action and status topics, messages on msgs):
// it waits for the daemon's online status, then sends three synthesis measurements and wants an
// optimal action for each.
func plantClosesLoop(t *testing.T, plant mqtt.Client, msgs <-chan received, how string) {
	t.Helper()
	if _, ok := awaitTopic(t, msgs, 10*time.Second, func(m received) bool {
		var s wire.Status
		return m.topic == "gbdmpc/pump1/status" && json.Unmarshal(m.payload, &s) == nil && s.State == wire.StateOnline
	}); !ok {
		t.Fatal("plant did not see the daemon online")
	}
	for seq := uint64(1); seq <= 3; seq++ {
		plant.Publish("gbdmpc/pump1/measurement", 1, false, faultSynthesisPayload(seq, time.Now())).WaitTimeout(5 * time.Second)
		m, ok := awaitTopic(t, msgs, 15*time.Second, func(m received) bool {
			var a wire.Action
			return m.topic == "gbdmpc/pump1/action" && json.Unmarshal(m.payload, &a) == nil && a.MeasurementSeq == seq
		})
		if !ok {
			t.Fatalf("no action for seq %d %s", seq, how)
		}
		var a wire.Action
		_ = json.Unmarshal(m.payload, &a)
		if a.Status != "optimal" {
			t.Errorf("seq %d: status %s (%s)", seq, a.Status, a.Reason)
		}
	}
}

// tlsClient connects to url as user with the CA in caFile; with subs, it subscribes and forwards
// every message to the returned channel. Connect errors are returned, not retried.
func tlsClient(t *testing.T, url, caFile, user, password string, subs map[string]byte) (mqtt.Client, <-chan received, error) {
	t.Helper()
	return secureClient(t, url, configs.TLS{CAFile: caFile}, user, password, subs)
}

// secureClient is tlsClient with a whole TLS configuration (a client certificate, say); an empty
// user logs in without a username.
func secureClient(t *testing.T, url string, tc configs.TLS, user, password string, subs map[string]byte) (mqtt.Client, <-chan received, error) {
	t.Helper()
	tlsc, err := tlsConfig(&tc)
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan received, 256)
	subscribed := make(chan error, 1)
	o := mqtt.NewClientOptions().AddBroker(url).SetClientID("tls-" + user + "-" + randomHex(3)).SetCleanSession(true).
		SetTLSConfig(tlsc).SetOrderMatters(true).SetAutoReconnect(false).SetConnectTimeout(5 * time.Second)
	if user != "" {
		o.SetUsername(user).SetPassword(password)
	}
	if len(subs) > 0 {
		o.SetOnConnectHandler(func(c mqtt.Client) {
			tok := c.SubscribeMultiple(subs, func(_ mqtt.Client, m mqtt.Message) {
				select {
				case msgs <- received{topic: m.Topic(), payload: append([]byte(nil), m.Payload()...), retained: m.Retained()}:
				default:
				}
			})
			tok.WaitTimeout(5 * time.Second)
			subscribed <- tok.Error()
		})
	}
	c := mqtt.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		if tok.Error() == nil {
			return nil, nil, fmt.Errorf("connect: timed out")
		}
		return nil, nil, tok.Error()
	}
	if len(subs) > 0 {
		select {
		case err := <-subscribed:
			if err != nil {
				c.Disconnect(50)
				return nil, nil, err
			}
		case <-time.After(10 * time.Second):
			c.Disconnect(50)
			return nil, nil, fmt.Errorf("not subscribed within 10s")
		}
	}
	return c, msgs, nil
}

func awaitTopic(t *testing.T, msgs <-chan received, timeout time.Duration, ok func(received) bool) (received, bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m := <-msgs:
			if ok(m) {
				return m, true
			}
		case <-deadline:
			return received{}, false
		}
	}
}

// TestMosquittoAuthTLS: the daemon against mosquitto with a password file, the shipped ACL and a TLS
// listener, over ssl:// with the test CA. The closed loop works; a wrong password and an untrusted
// CA are refused with errors that say so; the ACL keeps the daemon's user to its topics.
func TestMosquittoAuthTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto with TLS: skipped under -short")
	}
	// A refused connection leaves paho's Disconnect waiting for the attempt in progress (see
	// TestPasswordFile).
	testsupport.NoLeaks(t)
	broker, caFile := startSecureMosquitto(t, map[string]string{"gbdmpc": "daemon-pw", "pump1": "plant-pw", "observer": "observer-pw"})
	defer broker.Kill()
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "mqtt-password")
	if err := os.WriteFile(pwFile, []byte("daemon-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	newCfg := func(ca string) *configs.Config {
		cfg := synthesisConfig(sslURL(broker))
		cfg.Plants[0].ID = "pump1" // the plant account of the shipped ACL
		cfg.Broker.Username, cfg.Broker.PasswordFile, cfg.Broker.TLS.CAFile = "gbdmpc", pwFile, ca
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	t.Run("closed loop", func(t *testing.T) {
		d := startDaemon(t, newCfg(caFile), Deps{})
		defer d.stop()
		plant, msgs, err := tlsClient(t, sslURL(broker), caFile, "pump1", "plant-pw", map[string]byte{"gbdmpc/pump1/action": 1, "gbdmpc/pump1/status": 1})
		if err != nil {
			t.Fatalf("plant connect: %v", err)
		}
		defer plant.Disconnect(50)
		plantClosesLoop(t, plant, msgs, "over TLS with authentication")
	})

	t.Run("acl", func(t *testing.T) {
		obs, seen, err := tlsClient(t, sslURL(broker), caFile, "observer", "observer-pw", map[string]byte{"#": 1})
		if err != nil {
			t.Fatalf("observer connect: %v", err)
		}
		defer obs.Disconnect(50)
		daemonUser, _, err := tlsClient(t, sslURL(broker), caFile, "gbdmpc", "daemon-pw", nil)
		if err != nil {
			t.Fatalf("connect as gbdmpc: %v", err)
		}
		defer daemonUser.Disconnect(50)
		// MQTT 3.1.1 has no way to refuse a publish: mosquitto acknowledges and drops it. The
		// allowed publish after the denied ones marks the point by which they would have arrived.
		denied := []string{"gbdmpc/pump1/measurement", "gbdmpc/pump1", "gbdmpc/other/topic", "elsewhere/x", "gbdmpc/pump1/action/extra"}
		if leaked := publishesPastACL(t, daemonUser, seen, denied, "gbdmpc/pump1/error"); len(leaked) > 0 {
			t.Errorf("the ACL let user gbdmpc publish on %v", leaked)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		_, _, err := tlsClient(t, sslURL(broker), caFile, "gbdmpc", "wrong", nil)
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "not authorized") && !strings.Contains(strings.ToLower(err.Error()), "bad user name or password") {
			t.Errorf("connect with a wrong password: %v; want a refusal naming authorization", err)
		}
		bad := filepath.Join(dir, "wrong-password")
		if err := os.WriteFile(bad, []byte("wrong\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := newCfg(caFile)
		cfg.Broker.PasswordFile = bad
		ready, logs := runBriefly(t, cfg)
		if ready {
			t.Error("the daemon became ready with a wrong password")
		}
		requireConnectError(t, logs, "not authorized", "bad user name or password")
	})

	t.Run("untrusted CA", func(t *testing.T) {
		otherCA, _ := testCA(t, t.TempDir())
		_, _, err := tlsClient(t, sslURL(broker), otherCA, "gbdmpc", "daemon-pw", nil)
		if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Errorf("connect with an untrusted CA: %v; want a certificate verification error", err)
		}
		ready, logs := runBriefly(t, newCfg(otherCA))
		if ready {
			t.Error("the daemon became ready with a CA that did not sign the broker's certificate")
		}
		requireConnectError(t, logs, "unknown authority")
	})
}

// runBriefly runs the daemon for two seconds and says whether it became ready, with the warnings
// and errors it logged.
func runBriefly(t *testing.T, cfg *configs.Config) (ready bool, logs string) {
	t.Helper()
	core, obs := observer.New(zap.WarnLevel)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	started := make(chan struct{}, 1)
	err := Run(ctx, cfg, Deps{Logger: zap.New(core), Notifier: &recordingNotifier{},
		Started: func(Info) { started <- struct{}{} }})
	if err != nil {
		t.Errorf("Run = %v; want a clean stop at the end of its context", err)
	}
	return len(started) > 0, logText(obs)
}

// logText is every entry observed, warnings and up, as "[level message key=value …]" in a line.
func logText(obs *observer.ObservedLogs) string {
	var b strings.Builder
	for _, e := range obs.All() {
		if e.Level < zap.WarnLevel {
			continue
		}
		fmt.Fprintf(&b, "[%s %s", e.Level, e.Message)
		for k, v := range e.ContextMap() {
			fmt.Fprintf(&b, " %s=%v", k, v)
		}
		b.WriteString("] ")
	}
	return b.String()
}

// requireConnectError wants the daemon's own log to say why it cannot connect: paho's ConnectRetry
// reports a refused CONNACK or a failed handshake only to its own loggers, so the session logs the
// connection notifications (session.onNotification); without that an operator would see a daemon
// that never gets ready and nothing about why.
func requireConnectError(t *testing.T, logs string, want ...string) {
	t.Helper()
	low := strings.ToLower(logs)
	for _, w := range want {
		if strings.Contains(low, w) {
			return
		}
	}
	t.Errorf("the daemon never became ready (as it should not) but logged nothing naming the cause %q; its warnings and errors: %s", want, logs)
}
