package controller

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
)

// testCA issues a CA and a server certificate for 127.0.0.1, writing the CA's PEM to dir.
func testCA(t *testing.T, dir string) (caFile string, server tls.Certificate) {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, srvKey := key(), key()
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gbdmpc test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
}

// The daemon reaches a TLS broker through ssl:// with the configured CA, and is refused without it.
func TestTLSBroker(t *testing.T) {
	testsupport.NoLeaks(t)
	dir := t.TempDir()
	caFile, cert := testCA(t, dir)
	srv := mochi.New(&mochi.Options{Logger: slog.New(zapHandler{zap.NewNop()})})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		t.Fatal(err)
	}
	ln := listeners.NewTCP(listeners.Config{Type: listeners.TypeTCP, ID: "tls", Address: "127.0.0.1:0",
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if err := srv.AddListener(ln); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	cfg := testsupport.EmbeddedConfig()
	cfg.Broker = configs.Broker{URL: "ssl://" + ln.Address(), ClientID: "gbdmpc-tls", TLS: configs.TLS{CAFile: caFile}}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	f := newFakeStepper(optimalDecision)
	d := startDaemon(t, cfg, fakeDeps(f))
	if !d.counterReaches(1, "gbdmpc_mqtt_connected", "plant", "p1") {
		t.Error("session not connected over TLS")
	}
	d.stop()

	// Without the CA the server certificate does not verify and the session never comes up.
	tc, err := tlsConfig(&configs.TLS{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", ln.Address(), tc)
	if err == nil {
		conn.Close()
		t.Error("TLS handshake succeeded without the test CA")
	}
	if _, err := tlsConfig(&configs.TLS{CAFile: filepath.Join(dir, "missing.pem")}); err == nil {
		t.Error("missing CA file accepted")
	}
}

// With a broker that requires a password, the daemon authenticates with the one in password_file
// (read at connection time, trailing newline trimmed).
func TestPasswordFile(t *testing.T) {
	// paho's Disconnect returns while its goroutine still waits for a connection attempt in progress
	// to give up (documented in paho); with a refused password one always is, for up to a second.
	testsupport.NoLeaks(t)
	srv := mochi.New(&mochi.Options{Logger: slog.New(zapHandler{zap.NewNop()})})
	ledger := &auth.Ledger{
		Auth: auth.AuthRules{{Username: "gbdmpc", Password: "s3cret", Allow: true}},
		ACL:  auth.ACLRules{{Filters: auth.Filters{"#": auth.ReadWrite}}},
	}
	if err := srv.AddHook(new(auth.Hook), &auth.Options{Ledger: ledger}); err != nil {
		t.Fatal(err)
	}
	ln := listeners.NewTCP(listeners.Config{Type: listeners.TypeTCP, ID: "auth", Address: "127.0.0.1:0"})
	if err := srv.AddListener(ln); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testsupport.EmbeddedConfig()
	cfg.Broker = configs.Broker{URL: "tcp://" + ln.Address(), ClientID: "gbdmpc-auth", Username: "gbdmpc", PasswordFile: pw}
	cfg.ApplyDefaults()
	f := newFakeStepper(optimalDecision)
	d := startDaemon(t, cfg, fakeDeps(f)) // Started fires only after the session subscribed
	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	d.expectAction("p1", 1)
	d.stop()

	// A wrong password never gets the daemon ready.
	if err := os.WriteFile(pw, []byte("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	ready := false
	err := Run(ctx, cfg, Deps{NewStepper: fakeDeps(f).NewStepper, Notifier: &recordingNotifier{},
		Started: func(Info) { ready = true }})
	if err != nil || ready {
		t.Errorf("with a wrong password: Run = %v, ready = %v; want a clean stop without readiness", err, ready)
	}
}
