package ipopt

/*
#cgo pkg-config: ipopt
#include <IpoptConfig.h>
*/
import "C"

// Version is the Ipopt version of the headers this binary was compiled against (IPOPT_VERSION from
// IpoptConfig.h, as installed by Debian's coinor-libipopt-dev). Ipopt 3.11's C interface has no
// call that reports the version of the loaded library (GetIpoptVersion arrived in 3.14), so this is
// the build-time version; the run-time library shares its soname (libipopt.so.1).
func Version() string {
	return C.IPOPT_VERSION
}
