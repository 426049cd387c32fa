package main

import (
	"context"
	"fmt"
	"io"

	"gbdmpc/plant/sim"
	"gbdmpc/testbed"
)

// simulateMQTT runs the simulated pump station as an MQTT plant against a running daemon.
func simulateMQTT(ctx context.Context, cfg sim.Config, url string, steps int, out string, speedup float64, plantID string, stdout, stderr io.Writer) error {
	done := 0
	res, err := testbed.RunTestbed(ctx, testbed.TestbedOptions{
		BrokerURL: url, PlantID: plantID, Steps: steps, SpeedUp: speedup, Sim: cfg, OutDir: out,
		OnStep: func(testbed.TestbedStep) {
			done++
			fmt.Fprintf(stderr, "\rsimulate: %d/%d periods", done, steps)
		},
	})
	fmt.Fprintln(stderr)
	if err != nil {
		return err
	}
	if err := res.Summary.WriteText(stdout); err != nil {
		return err
	}
	if out != "" {
		fmt.Fprintf(stdout, "wrote %s/{steps.csv,figure.png,summary.json,summary.txt}\n", out)
	}
	return nil
}
