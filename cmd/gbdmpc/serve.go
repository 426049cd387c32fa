package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"gbdmpc/configs"
	"gbdmpc/controller"
	"gbdmpc/plant/registry"
)

func cmdServe(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	path := fs.String("config", "", "configuration file (YAML)")
	configs.RegisterGoFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return errors.New("--config FILE is required")
	}
	load := func() (*configs.Config, error) {
		return configs.Load(configs.Source{File: *path, GoFlags: fs, Families: registry.Names()})
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	log, level, err := controller.NewLogger(cfg.Log)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	reg := serveRegistry()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				select {
				case reload <- struct{}{}:
				default:
				}
			}
		}
	}()
	return controller.Run(ctx, cfg, controller.Deps{
		Logger: log, Level: level, Registry: reg, Version: version,
		Reload: reload, LoadConfig: load,
	})
}

// serveRegistry is the registry /metrics serves: the daemon's own series plus the Go runtime's and
// the process's (process_start_time_seconds is what the GbdmpcNoMeasurement rule measures uptime by).
func serveRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
