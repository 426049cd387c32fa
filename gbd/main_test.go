package gbd_test

import (
	"os"
	"testing"

	"gbdmpc/gbd/master/cbc"
)

// TestMain lets this test binary serve as a CBC worker: the master suite's isolated CBC master
// starts its workers from it, and they must serve rather than run the tests.
func TestMain(m *testing.M) {
	cbc.ServeIfWorker()
	os.Exit(m.Run())
}
