package controller

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"gbdmpc/configs"
)

// EmbeddedBroker is an in-process MQTT broker (mochi-mqtt), so that the demo and a single-machine
// installation need nothing else.
//
// It admits every client and allows every topic (mochi's allow-all hook). That is acceptable only
// because it listens on a loopback address, where just local processes can reach it; the config
// refuses any other address, and so does StartEmbeddedBroker. Anything that must be reachable from
// the network belongs on a real broker with authentication and TLS.
type EmbeddedBroker struct {
	srv  *mochi.Server
	addr string
}

// StartEmbeddedBroker listens on addr (host:port on loopback; port 0 picks a free one) and serves
// until Close.
func StartEmbeddedBroker(addr string, log *zap.Logger) (*EmbeddedBroker, error) {
	if log == nil {
		log = zap.NewNop()
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: listen address %q: %w", addr, err)
	}
	if !configs.IsLoopback(host) {
		return nil, fmt.Errorf("embedded broker: %q is not a loopback address; the embedded broker admits every client", addr)
	}
	srv := mochi.New(&mochi.Options{
		Logger:                 slog.New(zapHandler{log.Named("broker")}),
		SysTopicResendInterval: 3600, // $SYS topics are for dashboards of a shared broker; keep them quiet
	})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	tcp := listeners.NewTCP(listeners.Config{Type: listeners.TypeTCP, ID: "gbdmpc-embedded", Address: addr})
	if err := srv.AddListener(tcp); err != nil { // AddListener opens the socket: errors surface here
		return nil, fmt.Errorf("embedded broker: listen on %s: %w", addr, err)
	}
	if err := srv.Serve(); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	log.Info("embedded MQTT broker listening", zap.String("addr", tcp.Address()))
	return &EmbeddedBroker{srv: srv, addr: tcp.Address()}, nil
}

// Addr is the address the broker listens on (the chosen port when started with port 0).
func (b *EmbeddedBroker) Addr() string { return b.addr }

// URL is the tcp:// URL clients connect to.
func (b *EmbeddedBroker) URL() string { return "tcp://" + b.addr }

// Server exposes the mochi server to tests (e.g. to cut a client's connection).
func (b *EmbeddedBroker) Server() *mochi.Server { return b.srv }

// Close disconnects every client and stops listening.
func (b *EmbeddedBroker) Close() error { return b.srv.Close() }

// zapHandler routes mochi's slog output into the daemon's zap logger, so the broker's messages share
// the daemon's format, level and destination.
type zapHandler struct{ l *zap.Logger }

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

func (h zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.l.Core().Enabled(zapLevel(l))
}

func (h zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
		return true
	})
	if ce := h.l.Check(zapLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	fields := make([]zap.Field, 0, len(attrs))
	for _, a := range attrs {
		fields = append(fields, zap.Any(a.Key, a.Value.Any()))
	}
	return zapHandler{h.l.With(fields...)}
}

func (h zapHandler) WithGroup(name string) slog.Handler { return zapHandler{h.l.Named(name)} }
