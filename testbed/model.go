package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"gbdmpc/plant/model"
	"gbdmpc/wire"
)

// ModelPlantOptions configure `gbdmpc simulate --mqtt` for a plant written as a model: the
// model's simulated plant (model.Sim) as an MQTT client of a running daemon.
type ModelPlantOptions struct {
	BrokerURL   string
	TopicPrefix string // default "gbdmpc"
	PlantID     string
	ClientID    string // default gbdmpc-model-sim-<random>
	Family      *model.Family
	Sim         model.SimConfig
	Steps       int
	// Period bounds the wait for each measurement's action; the plant then keeps its last action
	// (the model's safe action before the first). An action that arrives ends the period at once,
	// so the loop runs as fast as the daemon answers.
	Period time.Duration
	OnStep func(ModelPlantStep)
}

// ModelPlantStep is one period as the plant saw it.
type ModelPlantStep struct {
	Seq      uint64
	Action   *wire.Action // nil when none arrived in the period
	Rejected string       // the daemon's error message for this measurement, if any
	Latency  time.Duration
	Plant    model.SimStep
}

// RunModelPlant runs o.Steps periods of the model's simulated plant against the daemon: publish a
// measurement, wait for the action that answers it (or the period's end, or an error-topic message
// for it), apply it to the plant.
func RunModelPlant(ctx context.Context, o ModelPlantOptions) ([]ModelPlantStep, error) {
	if o.Family == nil || o.Steps < 1 || o.Period <= 0 || o.PlantID == "" {
		return nil, fmt.Errorf("testbed: a model plant needs a family, a plant id, steps ≥ 1 and a period")
	}
	if o.TopicPrefix == "" {
		o.TopicPrefix = "gbdmpc"
	}
	if o.ClientID == "" {
		o.ClientID = "gbdmpc-model-sim-" + randomHex(4)
	}
	topic := func(kind string) string { return o.TopicPrefix + "/" + o.PlantID + "/" + kind }
	type msg struct {
		kind    string
		payload []byte
	}
	// The callbacks only copy and hand over; this goroutine owns the plant.
	inbox := make(chan msg, 64)
	client := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(o.BrokerURL).SetClientID(o.ClientID).
		SetConnectTimeout(10 * time.Second).SetAutoReconnect(true))
	if tok := client.Connect(); !tok.WaitTimeout(15*time.Second) || tok.Error() != nil {
		return nil, fmt.Errorf("testbed: connect %s: %v", o.BrokerURL, tok.Error())
	}
	defer client.Disconnect(100)
	for _, kind := range []string{"action", "error"} {
		if tok := client.Subscribe(topic(kind), 1, func(_ mqtt.Client, m mqtt.Message) {
			select {
			case inbox <- msg{kind, append([]byte(nil), m.Payload()...)}:
			default: // a flood the plant cannot read is not its problem to queue
			}
		}); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			return nil, fmt.Errorf("testbed: subscribe %s: %v", topic(kind), tok.Error())
		}
	}
	plant := model.NewSim(o.Family, o.Sim)
	last := o.Family.SafeAction()
	var steps []ModelPlantStep
	for range o.Steps {
		payload, seq := plant.MeasurementAt(time.Now().UnixMilli())
		start := time.Now()
		if tok := client.Publish(topic("measurement"), 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			return steps, fmt.Errorf("testbed: publish: %v", tok.Error())
		}
		st := ModelPlantStep{Seq: seq}
		timer := time.NewTimer(o.Period)
	wait:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return steps, ctx.Err()
			case <-timer.C:
				break wait
			case m := <-inbox:
				if m.kind == "error" {
					var e struct {
						Seq   uint64 `json:"seq"`
						Error string `json:"error"`
					}
					if json.Unmarshal(m.payload, &e) == nil && e.Seq == seq {
						st.Rejected = e.Error
						timer.Stop()
						break wait
					}
					continue
				}
				var a wire.Action
				if err := json.Unmarshal(m.payload, &a); err != nil || a.MeasurementSeq != seq {
					continue // an answer to an earlier measurement: too late to apply
				}
				st.Action, st.Latency = &a, time.Since(start)
				timer.Stop()
				break wait
			}
		}
		if st.Action != nil {
			last = st.Action.Apply
		}
		var err error
		if st.Plant, err = plant.Step(last); err != nil {
			return steps, fmt.Errorf("testbed: the plant refused the action %s: %w", last, err)
		}
		steps = append(steps, st)
		if o.OnStep != nil {
			o.OnStep(st)
		}
	}
	return steps, nil
}
