package mpc

import (
	"os"
	"testing"

	"gbdmpc/gbd/master/cbc"
)

// TestMain lets this test binary serve as a CBC worker: the product's CBC master
// (backend.CBCMaster) starts its workers from it, and they must serve rather than run the tests.
func TestMain(m *testing.M) {
	cbc.ServeIfWorker()
	os.Exit(m.Run())
}
