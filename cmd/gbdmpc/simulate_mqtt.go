package main

import (
	"context"
	"fmt"
	"io"

	"gbdmpc/controller"
	"gbdmpc/plant/sim"
)

// simulateMQTT runs the simulated pump station as an MQTT plant against a running daemon.
func simulateMQTT(ctx context.Context, cfg sim.Config, url string, steps int, out string, speedup float64, plantID string, stdout, stderr io.Writer) error {
	done := 0
	res, err := controller.RunTestbed(ctx, controller.TestbedOptions{
		BrokerURL: url, PlantID: plantID, Steps: steps, SpeedUp: speedup, Sim: cfg, OutDir: out,
		OnStep: func(controller.TestbedStep) {
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
