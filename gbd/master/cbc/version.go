package cbc

/*
#cgo pkg-config: cbc
#include "Cbc_C_Interface.h"
*/
import "C"

// Version is the version of the CBC library the process runs with, as the library itself reports
// it (Cbc_getVersion), so `gbdmpc version` names the shared library actually loaded, not the
// headers the binary was compiled against. The string is static in the library; no solver state
// is touched, so it is safe from any goroutine.
func Version() string {
	return C.GoString(C.Cbc_getVersion())
}
