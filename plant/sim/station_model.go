package sim

import (
	"encoding/json"
	"fmt"

	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// A model of the station (plant/model, configs/models/pumpstation*.yaml) names the level level_m,
// pump p's on/off unit "p<p+1>" and its flow "q<p+1>", and the forecasts demand_m3h and
// price_eur_kwh. stationToModel and modelToStation translate the simulator's measurement and the
// model's action by those names, so that a model can control this simulator (LoopOptions.Controller)
// on exactly the day the built-in family sees.

// stationToModel rewrites a station measurement for its model: pumps_on becomes p1..pn.
func stationToModel(payload []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, err
	}
	var on []int
	if err := json.Unmarshal(m["pumps_on"], &on); err != nil {
		return nil, fmt.Errorf("pumps_on: %w", err)
	}
	delete(m, "pumps_on")
	for p, v := range on {
		m[fmt.Sprintf("p%d", p+1)] = json.RawMessage(fmt.Sprint(v))
	}
	return json.Marshal(m)
}

// modelToStation reads a model's action for a station of np pumps: q1..qn and p1..pn.
func modelToStation(a mpc.Action, np int) (mpc.Action, error) {
	var m map[string]float64
	if err := json.Unmarshal(a, &m); err != nil {
		return nil, err
	}
	out := pumpstation.ApplyJSON{PumpsOn: make([]int, np), Flow: make([]float64, np)}
	for p := range np {
		on, ok1 := m[fmt.Sprintf("p%d", p+1)]
		q, ok2 := m[fmt.Sprintf("q%d", p+1)]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("the model's action %s has no p%d or q%d: not a model of this %d-pump station", a, p+1, p+1, np)
		}
		out.PumpsOn[p], out.Flow[p] = int(on), q
	}
	return json.Marshal(out)
}
