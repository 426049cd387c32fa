package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"gbdmpc/plant/model"
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

// simulateModelMQTT runs a model's simulated plant as an MQTT plant against a running daemon,
// waiting at most one configured period for each action.
func simulateModelMQTT(ctx context.Context, fam *model.Family, cfg model.SimConfig, url, plantID string, period time.Duration, steps int, out string, stdout, stderr io.Writer) error {
	done := 0
	res, err := testbed.RunModelPlant(ctx, testbed.ModelPlantOptions{
		BrokerURL: url, PlantID: plantID, Family: fam, Sim: cfg, Steps: steps, Period: period,
		OnStep: func(testbed.ModelPlantStep) {
			done++
			fmt.Fprintf(stderr, "\rsimulate: %d/%d periods", done, steps)
		},
	})
	fmt.Fprintln(stderr)
	if err != nil {
		return err
	}
	recs := make([]model.LoopRecord, len(res))
	for i, st := range res {
		r := model.LoopRecord{SimStep: st.Plant, Status: "missed"}
		switch {
		case st.Action != nil:
			r.Status, r.Iterations, r.SolveSeconds = st.Action.Status, st.Action.Iterations, st.Action.SolveSeconds
			r.Objective = float64(st.Action.Objective)
			r.Relaxed = st.Action.Relaxed != nil
		case st.Rejected != "":
			r.Status = "rejected"
		}
		recs[i] = r
	}
	return writeModelRun(fam, recs, 0, out, stdout)
}
