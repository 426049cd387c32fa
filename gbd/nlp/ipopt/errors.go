package ipopt

import (
	"errors"
	"fmt"
)

// ErrInvalidProblem is wrapped by every *ProblemError, so callers can test with errors.Is
// without caring which field was wrong.
var ErrInvalidProblem = errors.New("ipopt: invalid problem")

// ProblemError reports a Problem, starting point, warm start or Options that Solve rejected in Go
// before any C call; catching these here gives a precise message instead of Ipopt's generic
// Invalid_Problem_Definition on stdout.
type ProblemError struct {
	Field  string // e.g. "XL", "JacRow", "x0"
	Index  int    // offending element, -1 when the whole field is wrong
	Reason string
}

func (e *ProblemError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("ipopt: invalid problem: %s[%d]: %s", e.Field, e.Index, e.Reason)
	}
	return fmt.Sprintf("ipopt: invalid problem: %s: %s", e.Field, e.Reason)
}

func (e *ProblemError) Unwrap() error { return ErrInvalidProblem }

func problemErr(field string, index int, format string, args ...any) *ProblemError {
	return &ProblemError{Field: field, Index: index, Reason: fmt.Sprintf(format, args...)}
}

// CallError reports a C entry point of Ipopt that failed outright.
type CallError struct {
	Call   string // the C function, e.g. "CreateIpoptProblem"
	Detail string
}

func (e *CallError) Error() string { return fmt.Sprintf("ipopt: %s %s", e.Call, e.Detail) }

// OptionError reports an option that Ipopt refused (unknown name, wrong type or value out of
// range). Ipopt also prints its own explanation to stdout at that point; the banner-free print
// level only takes effect later, inside IpoptSolve.
type OptionError struct {
	Call  string // AddIpoptStrOption, AddIpoptIntOption or AddIpoptNumOption; empty if rejected in Go
	Name  string
	Value any
}

func (e *OptionError) Error() string {
	if e.Call == "" {
		return fmt.Sprintf("ipopt: option %q: unsupported value type %T (want string, int or float64)", e.Name, e.Value)
	}
	return fmt.Sprintf("ipopt: %s rejected option %q = %v", e.Call, e.Name, e.Value)
}

// SolveError reports an IpoptSolve return status that means the call was malformed or Ipopt
// broke down (invalid option or problem definition, exceptions, out of memory), as opposed to an
// outcome of the optimisation such as infeasibility or an iteration limit, which are only a Status.
type SolveError struct {
	Status Status
}

func (e *SolveError) Error() string {
	return fmt.Sprintf("ipopt: IpoptSolve returned %v (%d)", e.Status, int(e.Status))
}

// CallbackPanicError reports a panic inside an Evaluator method. The panic is recovered in the
// callback so that it never unwinds through Ipopt's C++ frames; the solve is stopped at the next
// iteration and this error is returned with the recovered value and the stack at the panic.
type CallbackPanicError struct {
	Callback string // Evaluator method name
	Value    any
	Stack    []byte
}

func (e *CallbackPanicError) Error() string {
	return fmt.Sprintf("ipopt: panic in Evaluator.%s: %v", e.Callback, e.Value)
}

// Unwrap exposes a panic value that is itself an error.
func (e *CallbackPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
