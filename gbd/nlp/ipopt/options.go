package ipopt

import (
	"math"
)

// Options selects Ipopt options. The zero value gives the defaults listed per field; every
// field that is zero and documented as "Ipopt default" is not passed to Ipopt at all.
type Options struct {
	// Tol is Ipopt's tol (relative NLP error). Default 1e-8 (Ipopt's own default).
	Tol float64
	// AcceptableTol is acceptable_tol. Zero keeps Ipopt default 1e-6.
	AcceptableTol float64
	// ConstrViolTol is constr_viol_tol (absolute). Zero keeps Ipopt default 1e-4.
	ConstrViolTol float64
	// MaxIter is max_iter. Default 3000. Use Extra to pass max_iter 0.
	MaxIter int
	// MaxCPUSeconds is max_cpu_time. Zero means no limit. Ipopt 3.11 measures the process's user
	// CPU time (getrusage), so other busy goroutines count towards the limit.
	MaxCPUSeconds float64
	// PrintLevel is print_level for stdout. Default 0 (silent); the banner is always suppressed.
	// Ipopt writes through C stdio, which is block-buffered when stdout is not a terminal, so
	// its lines may appear late or interleave oddly with Go output; use it for debugging only.
	PrintLevel int
	// WarmStart sets warm_start_init_point yes: the solve starts from x0 and the multipliers in
	// the *WarmStart argument. Unless overridden in Extra, it also sets warm_start_bound_push,
	// warm_start_slack_bound_push and warm_start_mult_bound_push to WarmStartPush, because
	// Ipopt's 1e-3 defaults push a converged point so far into the interior that a restart
	// from it took 3 (adaptive) to 16 (monotone) iterations instead of 1.
	WarmStart bool
	// MuInit is mu_init. Zero keeps Ipopt default 0.1, or WarmStartMuInit with WarmStart.
	MuInit float64
	// MonotoneMu selects Ipopt's own default barrier update (mu_strategy monotone). By default
	// this package uses mu_strategy adaptive with mu_oracle probing (Mehrotra's probing
	// heuristic), which needs about half the iterations on the GBD subproblems (27 → 11 on the
	// synthesis benchmark, same solution to 1e-9); every Ipopt iteration costs several MUMPS
	// calls with a fixed cost each (doc.go, "Performance"), so iterations are what matters. The probing oracle is chosen over
	// Ipopt's adaptive default (quality-function) because the latter needed 516 iterations to
	// declare a small convex problem infeasible where monotone and probing need 15–21.
	MonotoneMu bool
	// Stop, if set, is called once per interior-point iteration; returning true ends the solve
	// with UserRequestedStop. Ipopt 3.11 has no wall-clock limit (max_cpu_time counts the whole
	// process's CPU time), so callers enforce deadlines with their own clock through Stop.
	Stop func() bool
	// Extra options are applied last, so they override everything above.
	Extra []Option
}

// Option is a raw Ipopt option. Value must be a string, an int or a float64; the type selects
// AddIpoptStrOption, AddIpoptIntOption or AddIpoptNumOption, which must match the type Ipopt
// registered the option with (e.g. max_iter is an int, tol a float64).
type Option struct {
	Name  string
	Value any
}

// Defaults applied by Solve for zero fields.
const (
	DefaultTol     = 1e-8
	DefaultMaxIter = 3000
	// WarmStartPush is the warm_start_*_push value used with Options.WarmStart.
	WarmStartPush = 1e-9
	// WarmStartMuInit is mu_init with Options.WarmStart and MuInit == 0: a barrier parameter
	// near the one the previous solve ended with, so the restart does not re-center.
	WarmStartMuInit = 1e-6
)

// list returns the options in the order they are handed to Ipopt.
func (o *Options) list() []Option {
	tol := o.Tol
	if tol == 0 {
		tol = DefaultTol
	}
	maxIter := o.MaxIter
	if maxIter == 0 {
		maxIter = DefaultMaxIter
	}
	l := make([]Option, 0, 16+len(o.Extra))
	l = append(l,
		// An empty option_file_name stops IpoptSolve from reading ./ipopt.opt: a daemon must
		// not change behaviour with its working directory.
		Option{"option_file_name", ""},
		Option{"sb", "yes"},
		Option{"print_level", o.PrintLevel},
		Option{"tol", tol},
		Option{"max_iter", maxIter},
		// Iterative refinement still runs whenever the residual test asks for it; this only
		// drops the one mandatory refinement solve per search direction.
		Option{"min_refinement_steps", 0},
	)
	if !o.MonotoneMu {
		l = append(l, Option{"mu_strategy", "adaptive"}, Option{"mu_oracle", "probing"})
	}
	if o.AcceptableTol != 0 {
		l = append(l, Option{"acceptable_tol", o.AcceptableTol})
	}
	if o.ConstrViolTol != 0 {
		l = append(l, Option{"constr_viol_tol", o.ConstrViolTol})
	}
	if o.MaxCPUSeconds != 0 {
		l = append(l, Option{"max_cpu_time", o.MaxCPUSeconds})
	}
	mu := o.MuInit
	if o.WarmStart {
		l = append(l,
			Option{"warm_start_init_point", "yes"},
			Option{"warm_start_bound_push", WarmStartPush},
			Option{"warm_start_slack_bound_push", WarmStartPush},
			Option{"warm_start_mult_bound_push", WarmStartPush},
		)
		if mu == 0 {
			mu = WarmStartMuInit
		}
	}
	if mu != 0 {
		l = append(l, Option{"mu_init", mu})
	}
	return append(l, o.Extra...)
}

func (o *Options) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"Tol", o.Tol}, {"AcceptableTol", o.AcceptableTol}, {"ConstrViolTol", o.ConstrViolTol},
		{"MaxCPUSeconds", o.MaxCPUSeconds}, {"MuInit", o.MuInit},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return problemErr("Options."+f.name, -1, "must be finite and ≥ 0, got %v", f.v)
		}
	}
	if o.MaxIter < 0 {
		return problemErr("Options.MaxIter", -1, "must be ≥ 0, got %d", o.MaxIter)
	}
	for _, e := range o.Extra {
		switch e.Value.(type) {
		case string, int, float64:
		default:
			return &OptionError{Name: e.Name, Value: e.Value}
		}
	}
	return nil
}
