package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/nlp/ipopt"
)

// Set at build time by the Makefile (`make build`, `make deb`):
//
//	go build -ldflags "-X main.version=$(git describe …) -X main.commit=… -X main.buildDate=…"
//
// A plain `go build` leaves them empty; the module build info the go command stamps into every
// binary built inside the repository then supplies the version and commit (buildVersion).
var version, commit, buildDate string

func init() {
	version, commit = buildVersion(version, commit)
}

// buildVersion fills what -ldflags did not set from the module build info: Go stamps the main
// module's version (a pseudo-version derived from the VCS commit) and vcs.revision/vcs.modified.
// "devel" remains when neither says anything (e.g. `go run` outside a repository).
func buildVersion(v, c string) (string, string) {
	info, ok := debug.ReadBuildInfo()
	if ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		if c == "" {
			var rev, modified string
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" && modified == "true" {
				rev += "-dirty"
			}
			c = rev
		}
	}
	if v == "" {
		v = "devel"
	}
	return v, c
}

// printVersion is `gbdmpc version` and `gbdmpc --version`: what an operator pastes into a bug
// report. CBC reports the version of the library actually loaded; Ipopt 3.11 cannot, so its line
// is the version of the headers the binary was compiled against.
func printVersion(w io.Writer) {
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	fmt.Fprintf(w, "gbdmpc %s\n", version)
	fmt.Fprintf(w, "commit:  %s\n", orUnknown(commit))
	fmt.Fprintf(w, "built:   %s\n", orUnknown(buildDate))
	fmt.Fprintf(w, "go:      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "ipopt:   %s (compile-time headers; Ipopt 3.11 has no run-time version call)\n", ipopt.Version())
	fmt.Fprintf(w, "cbc:     %s (loaded library, Cbc_getVersion)\n", cbc.Version())
}
