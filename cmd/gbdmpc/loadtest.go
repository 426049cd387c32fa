package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"gbdmpc/testbed"
)

func cmdLoadtest(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("loadtest", stderr)
	broker := fs.String("broker", "", "external broker URL (default: start mosquitto on a free loopback port)")
	mosq := fs.String("mosquitto", "", "mosquitto binary to start when --broker is empty (default: mosquitto on the PATH or /usr/sbin/mosquitto)")
	plants := fs.String("plants", "1,4,16,64", "comma-separated numbers of pump stations, one daemon run each")
	period := fs.Duration("period", time.Second, "control period of every plant")
	deadline := fs.Duration("deadline", 0, "deadline of every plant (default period/2)")
	steps := fs.Int("steps", 30, "periods each plant runs per daemon run")
	flood := fs.Bool("flood", true, "flood the first plant's measurement topic with junk")
	floodRate := fs.Float64("flood-rate", 5000, "junk messages a second (0: as fast as the broker takes them, which on a small machine measures the flooder's share of the CPU as much as the daemon)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	sameHours := fs.Bool("same-hours", false, "start every simulated plant's day at the same hour, so that all meet the day's hard steps in the same periods (default: plant i of N from hour 24i/N)")
	synced := fs.Bool("synchronized", false, "every plant samples at the same instant of the period (one burst a period; default: instants spread evenly over the period, as independent plants' clocks are)")
	genNice := fs.Int("generator-nice", 0, "run the load rig (plants, flood and the mosquitto it starts) this many nice steps below the daemon (1–19; 0: all at one priority), so that on one machine the daemon gets the cores it can use first, as on a machine of its own")
	dir := fs.String("dir", "", "keep each run's daemon configuration and log in this directory (default: a temporary one, removed)")
	if err := parse(fs, args); err != nil {
		return err
	}
	ns, _, ok := parseInts(*plants)
	if !ok || slices.ContainsFunc(ns, func(n int) bool { return n < 1 }) {
		return fmt.Errorf("loadtest: --plants %q: want positive integers separated by commas", *plants)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	start := (*exec.Cmd).Start
	if *genNice != 0 {
		if start, err = lowerGenerator(*genNice); err != nil {
			return fmt.Errorf("loadtest: %w", err)
		}
	}
	url := *broker
	if url == "" {
		stop, u, err := startMosquitto(*mosq)
		if err != nil {
			return err
		}
		defer stop()
		url = u
	}
	log, _ := zap.NewDevelopment()
	rep, err := testbed.RunLoad(ctx, testbed.LoadOptions{BrokerURL: url, Plants: ns, Period: *period, Deadline: *deadline,
		Steps: *steps, Start: start, Flood: *flood, FloodRate: *floodRate, Logger: log, Dir: *dir, Synchronized: *synced, SameHours: *sameHours,
		Daemon: func(cfg string) *exec.Cmd { return exec.Command(self, "serve", "--config", cfg) }})
	if rep != nil && len(rep.Rows) > 0 {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if jerr := enc.Encode(struct {
				V int `json:"v"`
				*testbed.LoadReport
			}{1, rep}); jerr != nil && err == nil {
				err = jerr
			}
		} else if werr := rep.WriteText(stdout); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// startMosquitto runs a mosquitto on a free loopback port for the load test, its queue large
// enough that the broker itself never drops the flood (which would hide the daemon's behaviour).
func startMosquitto(bin string) (stop func(), url string, err error) {
	if bin == "" {
		if bin, err = exec.LookPath("mosquitto"); err != nil {
			bin = "/usr/sbin/mosquitto"
		}
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, "", fmt.Errorf("loadtest: no mosquitto (%v): install it or pass --broker", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "gbdmpc-load-mosquitto-")
	if err != nil {
		return nil, "", err
	}
	conf := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest none\nmax_queued_messages 100000\nset_tcp_nodelay true\n", port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, "-c", conf)
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, "", errors.New("loadtest: mosquitto did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return stop, fmt.Sprintf("tcp://127.0.0.1:%d", port), nil
}
