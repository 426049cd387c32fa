package main

import (
	"context"
	"errors"
	"io"
)

// simulateMQTT is wired to the controller's MQTT testbed once it lands.
func simulateMQTT(ctx context.Context, url string, steps int, seed uint64, stdout, stderr io.Writer) error {
	return errors.New("--mqtt: the MQTT testbed is not wired yet")
}
