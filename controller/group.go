package controller

import (
	"context"
	"errors"
	"fmt"
)

// actor is one long-running part of the daemon. run must return soon after ctx is cancelled.
type actor struct {
	name string
	run  func(ctx context.Context) error
}

// runActors runs every actor until the first one returns, then cancels the others and waits for
// them — prometheus's run groups, reduced to what the daemon needs. An actor returning while the
// parent context is still live is a failure even with a nil error (an MQTT session or an HTTP server
// that stops on its own means the daemon can no longer do its job), so it is reported as one.
func runActors(ctx context.Context, actors []actor) error {
	if len(actors) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(actors))
	for _, a := range actors {
		go func() { results <- result{a.name, a.run(ctx)} }()
	}
	first := <-results
	parentDone := ctx.Err() != nil
	cancel()
	errs := []error{}
	if first.err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", first.name, first.err))
	} else if !parentDone {
		errs = append(errs, fmt.Errorf("%s stopped unexpectedly", first.name))
	}
	for range len(actors) - 1 {
		if r := <-results; r.err != nil && !errors.Is(r.err, context.Canceled) {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, r.err))
		}
	}
	return errors.Join(errs...)
}
