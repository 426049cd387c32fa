package controller

import (
	"encoding/json"
	"fmt"

	"gbdmpc/configs"
	"gbdmpc/mpc"
	"gbdmpc/plant/synthesis"
)

// newSynthesis is the paper's static synthesis problem as a plant: a "measurement" carries θ and the
// action is the optimal y, so the daemon's whole MQTT path runs on the problem the paper's numbers
// come from. It has no plant configuration; safe_action may replace the family's {"y":null,"x":null}.
func newSynthesis(p *configs.Plant) (mpc.Family, error) {
	if len(p.Params) > 0 {
		return nil, fmt.Errorf("params: the synthesis family has no plant configuration")
	}
	safe, err := p.SafeActionJSON()
	if err != nil {
		return nil, err
	}
	f := synthesis.NewFamily()
	if safe == nil {
		return f, nil
	}
	return &synthesisWithSafe{MPCFamily: f, safe: safe}, nil
}

// synthesisWithSafe replaces the family's safe action with the configured one.
type synthesisWithSafe struct {
	*synthesis.MPCFamily
	safe json.RawMessage
}

func (f *synthesisWithSafe) SafeAction() mpc.Action { return f.safe }
