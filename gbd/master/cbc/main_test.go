package cbc

import (
	"os"
	"testing"
)

// TestMain lets this test binary serve as a CBC worker: the workers of the isolated solves are
// this binary started again, and must serve rather than run the tests.
func TestMain(m *testing.M) {
	ServeIfWorker()
	os.Exit(m.Run())
}
