package controller

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
)

// clientCA is a certificate authority that issues MQTT client certificates. testCA keeps its key to
// itself, so the mutual-TLS tests have their own.
type clientCA struct {
	t    *testing.T
	dir  string
	file string // the CA certificate, PEM
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	mu   sync.Mutex // issue may be called from parallel subtests
	next int64
}

func newClientCA(t *testing.T, dir, name string) *clientCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &clientCA{t: t, dir: dir, file: filepath.Join(dir, "client-ca.pem"), cert: cert, key: key, next: 2}
	writePrivate(t, ca.file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

// issue writes a client certificate (ExtKeyUsageClientAuth) whose CN is cn, the MQTT identity under
// use_identity_as_username, and its P-256 key, both mode 0600. pkcs8 picks the "PRIVATE KEY"
// encoding over SEC1's "EC PRIVATE KEY", so both of the forms tls.LoadX509KeyPair reads are used.
func (ca *clientCA) issue(cn string, pkcs8 bool) configs.TLS {
	t := ca.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.mu.Lock()
	serial := ca.next
	ca.next++
	ca.mu.Unlock()
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	block := &pem.Block{Type: "EC PRIVATE KEY"}
	if pkcs8 {
		block.Type = "PRIVATE KEY"
		block.Bytes, err = x509.MarshalPKCS8PrivateKey(key)
	} else {
		block.Bytes, err = x509.MarshalECPrivateKey(key)
	}
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(ca.dir, fmt.Sprintf("%s-%d", cn, serial))
	writePrivate(t, base+".pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writePrivate(t, base+".key", pem.EncodeToMemory(block))
	return configs.TLS{CertFile: base + ".pem", KeyFile: base + ".key"}
}

func writePrivate(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// serverCert makes a test CA in dir and writes the broker's certificate and key signed by it
// (server.pem, server.key), returning the CA's file and the two paths.
func serverCert(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caFile, cert := testCA(t, dir)
	certFile, keyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	writePrivate(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}))
	writePrivate(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return caFile, certFile, keyFile
}

// startCertMosquitto runs mosquitto with a TLS listener that requires a client certificate signed by
// clients (require_certificate; use_identity_as_username makes the certificate's CN the MQTT user),
// no password file, anonymous access refused and authACL. The server certificate comes from a
// separate testCA, whose file (serverCA) the daemon trusts. The broker's log is shown if t fails.
func startCertMosquitto(t *testing.T, clients *clientCA) (m *testsupport.Mosquitto, serverCA string) {
	t.Helper()
	if _, err := os.Stat(testsupport.MosquittoBin); err != nil {
		t.Skipf("mosquitto not installed at %s: %v", testsupport.MosquittoBin, err)
	}
	dir := t.TempDir()
	serverCA, certFile, keyFile := serverCert(t, dir)
	aclFile := filepath.Join(dir, "acl")
	writePrivate(t, aclFile, authACL(t))
	logFile := filepath.Join(dir, "mosquitto.log")

	port := testsupport.FreePort(t)
	// mosquitto 2.0 reads tls_version as a minimum: Go negotiates TLS 1.3 here, where the broker
	// rejects a client certificate only after the client has finished its handshake.
	conf := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("per_listener_settings false\nallow_anonymous false\nacl_file %s\npersistence false\n"+
		"log_dest file %s\nlog_type all\n"+
		"listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\ntls_version tlsv1.2\n"+
		"require_certificate true\nuse_identity_as_username true\n",
		aclFile, logFile, port, clients.file, certFile, keyFile)
	// As root, mosquitto drops to the "mosquitto" user, which cannot read a test's private directory.
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		body = "user root\n" + body
	}
	writePrivate(t, conf, []byte(body))
	t.Cleanup(func() { // runs after m.kill, registered below
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("mosquitto log:\n%s", b)
		}
	})
	m = testsupport.ConfiguredMosquitto(t, port, conf)
	m.Start()
	return m, serverCA
}

// certClient connects to url with tc (CA, client certificate) and, when username is set, that
// username in CONNECT (mosquitto ignores it for the ACL: the certificate's CN is the identity).
func certClient(t *testing.T, url string, tc configs.TLS, username string, subs map[string]byte) (mqtt.Client, <-chan received, error) {
	t.Helper()
	return secureClient(t, url, tc, username, "ignored", subs)
}

// notifyCore passes every entry it writes to notify as well as to the wrapped core.
type notifyCore struct {
	zapcore.Core
	notify func(zapcore.Entry, []zapcore.Field)
}

func (c notifyCore) With(f []zapcore.Field) zapcore.Core {
	return notifyCore{c.Core.With(f), c.notify}
}

func (c notifyCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c notifyCore) Write(e zapcore.Entry, f []zapcore.Field) error {
	c.notify(e, f)
	return c.Core.Write(e, f)
}

// runRefused runs the daemon until the broker has refused it at least twice (it keeps retrying, and
// stays unready) and one of the failures named a cause in causes, or for at most 15s. It returns
// whether the daemon became ready, every distinct failure reason paho reported, and the daemon's
// warnings and errors formatted as runBriefly does, for requireConnectError.
//
// runBriefly's fixed two seconds are not enough here: under TLS 1.3 the broker's alert can lose the
// race with paho's CONNECT, whose write then fails with "connection reset by peer" (paho returns
// that and never reads the alert waiting behind it), so a given attempt may not name the cause.
func runRefused(t *testing.T, cfg *configs.Config, causes ...string) (ready bool, reasons []string, logs string) {
	t.Helper()
	obsCore, obs := observer.New(zap.DebugLevel)
	var mu sync.Mutex
	failures, named := 0, false
	refused := make(chan struct{}, 1)
	core := notifyCore{obsCore, func(e zapcore.Entry, fields []zapcore.Field) {
		if !strings.HasPrefix(e.Message, "mqtt connection failed") { // "… failed again" at debug
			return
		}
		reason := ""
		for _, f := range fields {
			if err, ok := f.Interface.(error); ok && f.Key == "error" {
				reason = err.Error()
			}
		}
		mu.Lock()
		defer mu.Unlock()
		failures++
		if !slices.Contains(reasons, reason) {
			reasons = append(reasons, reason)
		}
		for _, c := range causes {
			named = named || strings.Contains(strings.ToLower(reason), c)
		}
		if failures >= 2 && named {
			poke(refused)
		}
	}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	started := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Deps{Logger: zap.New(core), Notifier: &recordingNotifier{},
			Started: func(Info) { started <- struct{}{} }})
	}()
	select {
	case <-refused:
	case <-started:
		ready = true
	case err := <-done:
		done <- err
	case <-time.After(15 * time.Second):
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v; want a clean stop at the end of its context", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of cancel")
	}
	ready = ready || len(started) > 0
	mu.Lock()
	defer mu.Unlock()
	return ready, slices.Clone(reasons), logText(obs)
}

// TestMosquittoClientCert: the daemon against mosquitto requiring a client certificate
// (require_certificate, use_identity_as_username, no passwords, anonymous refused, the shipped ACL).
// With a certificate for CN gbdmpc from the broker's client CA the closed loop works; the broker
// takes the identity from the certificate and not from the CONNECT username; without a certificate
// or with one from another CA the daemon never gets ready and logs why.
func TestMosquittoClientCert(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto with mutual TLS: skipped under -short")
	}
	defer func() {
		// After a refused attempt paho's connect goroutine sleeps out its one-second retry interval
		// before it notices the client was disconnected, so it (and Disconnect's goroutine, waiting
		// for it) can outlive Run by up to a second: wait for them to end (each goleak.Find retries
		// for about 0.4s), then check strictly.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if goleak.Find() == nil {
				break
			}
		}
		goleak.VerifyNone(t)
	}()
	clients := newClientCA(t, t.TempDir(), "gbdmpc test client CA")
	broker, serverCA := startCertMosquitto(t, clients)
	defer broker.Kill() // before the leak check: its waiter is a goroutine
	withCA := func(tc configs.TLS) configs.TLS { tc.CAFile = serverCA; return tc }
	newCfg := func(tc configs.TLS) *configs.Config {
		cfg := synthesisConfig(sslURL(broker))
		cfg.Plants[0].ID = "pump1" // the plant account of the shipped ACL
		cfg.Broker.TLS = tc        // no username, no password: the certificate is the login
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	t.Run("closed loop", func(t *testing.T) {
		d := startDaemon(t, newCfg(withCA(clients.issue("gbdmpc", false))), Deps{})
		defer d.stop()
		plant, msgs, err := certClient(t, sslURL(broker), withCA(clients.issue("pump1", true)), "",
			map[string]byte{"gbdmpc/pump1/action": 1, "gbdmpc/pump1/status": 1})
		if err != nil {
			t.Fatalf("plant connect with its certificate: %v", err)
		}
		defer plant.Disconnect(50)
		plantClosesLoop(t, plant, msgs, "with client certificates")
	})

	// The ACL applies to the certificate's CN: a client holding pump1's certificate that claims to be
	// gbdmpc in CONNECT still cannot publish what only gbdmpc may (an action), and can publish what
	// pump1 may (a measurement), which marks the point by which the denied publish would have arrived.
	t.Run("identity from the certificate", func(t *testing.T) {
		obs, seen, err := certClient(t, sslURL(broker), withCA(clients.issue("observer", true)), "", map[string]byte{"#": 1})
		if err != nil {
			t.Fatalf("observer connect: %v", err)
		}
		defer obs.Disconnect(50)
		impostor, _, err := certClient(t, sslURL(broker), withCA(clients.issue("pump1", false)), "gbdmpc", nil)
		if err != nil {
			t.Fatalf("connect with pump1's certificate and username gbdmpc: %v", err)
		}
		defer impostor.Disconnect(50)
		if leaked := publishesPastACL(t, impostor, seen, []string{"gbdmpc/pump1/action"}, "gbdmpc/pump1/measurement"); len(leaked) > 0 {
			t.Errorf("a pump1 certificate with username gbdmpc published on %v: the broker took the username, not the certificate", leaked)
		}
	})

	rogue := newClientCA(t, t.TempDir(), "some other CA")
	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			tls    configs.TLS
			causes []string
		}{
			// TLS 1.3's certificate_required alert; TLS 1.2 has only handshake_failure for it.
			{"no client certificate", configs.TLS{CAFile: serverCA}, []string{"certificate required", "handshake failure"}},
			{"certificate from another CA", withCA(rogue.issue("gbdmpc", true)), []string{"unknown certificate authority"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				ready, reasons, logs := runRefused(t, newCfg(c.tls), c.causes...)
				t.Logf("connection failures reported: %q", reasons)
				if ready {
					t.Error("the daemon became ready")
				}
				requireConnectError(t, logs, c.causes...)
			})
		}
	})
}
