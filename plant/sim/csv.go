package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// csvHeader names the columns of steps.csv; units are in the names.
func csvHeader(np int) []string {
	h := []string{"step", "time_h", "hour_of_day", "level_m", "level_next_m",
		"demand_forecast_m3h", "demand_actual_m3h", "price_eur_kwh"}
	for p := 1; p <= np; p++ {
		h = append(h, fmt.Sprintf("on%d", p))
	}
	for p := 1; p <= np; p++ {
		h = append(h, fmt.Sprintf("flow%d_m3h", p))
	}
	for p := 1; p <= np; p++ {
		h = append(h, fmt.Sprintf("flow%d_actual_m3h", p))
	}
	return append(h, "cost_eur", "violation", "status", "objective", "lbd", "ubd", "gap",
		"iterations", "solve_seconds", "agent_proposed", "agent_feasible", "agent_accepted",
		"agent_solver_selected", "carried_cuts", "reason", "relaxed", "relaxed_max_violation_m", "relaxed_unserved_m3")
}

func writeCSV(w io.Writer, recs []StepRecord) error {
	cw := csv.NewWriter(w)
	np := 0
	if len(recs) > 0 {
		np = len(recs[0].On)
	}
	if err := cw.Write(csvHeader(np)); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	i := strconv.Itoa
	for k := range recs {
		r := &recs[k]
		row := []string{i(r.Step), f(r.TimeH), f(r.Hour), f(r.LevelStart), f(r.LevelEnd),
			f(r.DemandForecast), f(r.DemandActual), f(r.Price)}
		for _, v := range r.On {
			row = append(row, i(v))
		}
		for _, v := range r.FlowCmd {
			row = append(row, f(v))
		}
		for _, v := range r.FlowActual {
			row = append(row, f(v))
		}
		viol := "0"
		if r.Violation {
			viol = "1"
		}
		row = append(row, f(r.CostEUR), viol, r.Status, f(r.Objective), f(r.LBD), f(r.UBD), f(r.Gap()),
			i(r.Iterations), f(r.SolveSeconds), i(r.Agent.Proposed), i(r.Agent.Feasible), i(r.Agent.Accepted),
			i(r.Agent.SolverSelected), i(r.Carried), r.Reason)
		if x := r.Relaxed; x != nil {
			row = append(row, "1", f(x.MaxViolation), f(x.Unserved))
		} else {
			row = append(row, "0", "0", "0")
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
