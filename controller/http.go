package controller

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// readyReport is the body of /readyz.
type readyReport struct {
	Ready  bool                   `json:"ready"`
	Plants map[string]plantReport `json:"plants"`
}

type plantReport struct {
	Ready         bool   `json:"ready"`
	Reason        string `json:"reason"`
	State         string `json:"state"`
	PolicyVersion string `json:"policy_version"`
}

// httpServer serves /metrics, /livez and /readyz. The listener is opened before the actors start, so
// a port already in use fails the start rather than a running daemon.
type httpServer struct {
	ln    net.Listener
	srv   *http.Server
	log   *zap.Logger
	loops []*plantLoop
	clock Clock
}

func newHTTPServer(ln net.Listener, g prometheus.Gatherer, loops []*plantLoop, clock Clock, log *zap.Logger) *httpServer {
	h := &httpServer{ln: ln, log: log, loops: loops, clock: clock}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", h.readyz)
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return h
}

func (h *httpServer) report() readyReport {
	now := h.clock.Now()
	r := readyReport{Ready: true, Plants: map[string]plantReport{}}
	for _, l := range h.loops {
		ok, why := l.readiness(now)
		v := l.view.Load()
		r.Plants[l.cfg.ID] = plantReport{Ready: ok, Reason: why, State: v.state,
			PolicyVersion: v.policyVersion}
		r.Ready = r.Ready && ok
	}
	return r
}

func (h *httpServer) readyz(w http.ResponseWriter, _ *http.Request) {
	r := h.report()
	w.Header().Set("Content-Type", "application/json")
	if !r.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(r)
}

func (h *httpServer) run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- h.srv.Serve(h.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(sctx); err != nil {
		h.log.Warn("http shutdown", zap.Error(err))
		_ = h.srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
