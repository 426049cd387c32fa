# gbdmpc — set-up, build, test and demo.
#
# `make demo` and `make test` install whatever is missing on a fresh Debian 12 machine (apt packages
# and Go modules) before they build, so a new user needs nothing but these two commands.

SHELL := /bin/bash
GO    ?= go
BIN   := bin/gbdmpc

APT_PACKAGES      := coinor-libipopt-dev coinor-libcbc-dev pkg-config gcc
# mosquitto is the real broker of the integration tests, prometheus brings promtool for the alert
# rules' tests (installed without its recommends, and on a machine with an init system its server
# starts: `systemctl disable --now prometheus` if you do not want it). coinor-libbonmin-dev is for
# the Bonmin reference harness only (internal/bonmin, cmd/gbdmpc-bonmin): the daemon does not link it.
APT_TEST_PACKAGES := mosquitto prometheus coinor-libbonmin-dev
# make bonmin: the Bonmin reference solver's command, bin/gbdmpc-bonmin.
APT_BONMIN_PACKAGES := coinor-libbonmin-dev
BONMIN_BIN := bin/gbdmpc-bonmin
# make deb: dpkg-shlibdeps (dpkg-dev) computes the runtime dependencies, lintian checks the package.
APT_DEB_PACKAGES  := dpkg-dev lintian
# make test-deb: systemd-analyze verify and an offline systemctl enable (PID 1 need not be systemd).
APT_DEB_TEST_PACKAGES := systemd

# The version every build stamps into the binary (`gbdmpc version`, gbdmpc_build_info): the nearest
# v* tag as `git describe` gives it, or, before the first tag, 0.0.0-<commits>-g<hash> so that
# versions still increase along the history; -dirty marks uncommitted changes. Outside a git
# checkout it stays empty and the binary falls back to the module build info.
GIT_DESCRIBE := $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
  { n=$$(git rev-list --count HEAD 2>/dev/null) && h=$$(git rev-parse --short=7 HEAD) && \
    echo "v0.0.0-$$n-g$$h$$(git diff --quiet HEAD 2>/dev/null || echo -dirty)"; })
VERSION    := $(patsubst v%,%,$(GIT_DESCRIBE))
COMMIT     := $(shell git rev-parse HEAD 2>/dev/null)$(if $(filter %-dirty,$(VERSION)),-dirty)
# SOURCE_DATE_EPOCH (reproducible builds) wins over the clock.
BUILD_DATE := $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS    := $(if $(VERSION),-X main.version=$(VERSION)) $(if $(COMMIT),-X main.commit=$(COMMIT)) -X main.buildDate=$(BUILD_DATE)

# The package's version is the same, spelled for dpkg: 0.0.0-58-g6f3a796-dirty → 0.0.0+git58.g6f3a796+dirty
# (a hyphen would start a Debian revision; ~ sorts a v1.0-rc1 tag before v1.0).
DEB_VERSION := $(shell echo '$(VERSION)' | sed -e 's/-\([0-9]*\)-g\([0-9a-f]*\)/+git\1.g\2/' -e 's/-dirty$$/+dirty/' -e 's/-/~/g')
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB         := gbdmpc_$(DEB_VERSION)_$(DEB_ARCH).deb

# Root installs directly; anyone else goes through sudo.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: all deps deps-test deps-deb deps-deb-test deps-bonmin build bonmin deb test test-deb test-short bench demo vet clean

all: build

# apt_install installs the listed Debian packages that are missing (apt-get update first, only
# then), with extra apt-get options in $(2).
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(2) $$missing; \
	fi
endef

# deps installs the system packages the build links against, only when one is missing, then the Go
# modules listed in go.sum.
deps:
	$(call apt_install,$(APT_PACKAGES))
	$(GO) mod download

deps-test: deps
	$(call apt_install,$(APT_TEST_PACKAGES),--no-install-recommends)

deps-deb: deps
	$(call apt_install,$(APT_DEB_PACKAGES),--no-install-recommends)

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/gbdmpc

deps-bonmin: deps
	$(call apt_install,$(APT_BONMIN_PACKAGES),--no-install-recommends)

# Solves `gbdmpc solve`'s instances with Bonmin B-BB or B-OA, to measure GBD against (see
# cmd/gbdmpc-bonmin). Not part of the Debian package.
bonmin: deps-bonmin
	$(GO) build -o $(BONMIN_BIN) ./cmd/gbdmpc-bonmin

# The Debian package, gbdmpc_<version>_<arch>.deb in this directory (packaging/build-deb.sh): the
# binary is built again for it: position-independent, -trimpath, stripped, and with Debian's
# hardening flags (dpkg-buildflags, hardening=+all) for the cgo parts. lintian fails the target on
# errors and warnings.
deb: deps-deb
	@test -n "$(DEB_VERSION)" || { echo "make deb: no version (needs a git checkout)"; exit 1; }
	mkdir -p build/deb
	export DEB_BUILD_MAINT_OPTIONS=hardening=+all; \
	CGO_CFLAGS="$$(dpkg-buildflags --get CFLAGS)" CGO_CXXFLAGS="$$(dpkg-buildflags --get CXXFLAGS)" \
	  CGO_CPPFLAGS="$$(dpkg-buildflags --get CPPFLAGS)" CGO_LDFLAGS="$$(dpkg-buildflags --get LDFLAGS)" \
	  $(GO) build -trimpath -buildmode=pie -ldflags "-s -w $(LDFLAGS)" -o build/deb/gbdmpc ./cmd/gbdmpc
	rm -f gbdmpc_*_$(DEB_ARCH).deb
	packaging/build-deb.sh build/deb/gbdmpc $(DEB_VERSION) .
	lintian --fail-on error,warning $(DEB)

# ./... includes the Bonmin harness, hence its library.
vet: deps-bonmin
	$(GO) vet ./...

# The whole suite, then the package installed and purged on this machine (as root; skipped
# otherwise). Long experiments are commands (see docs/experiments.md), not tests.
test: deps-test vet
	$(GO) test -count=1 -timeout 45m ./...
	$(MAKE) test-deb

# Installs the package built by `make deb` on this machine with apt-get, checks files, user,
# permissions, `gbdmpc version`, `systemd-analyze verify`, the daemon as its user, then purges it and
# checks nothing is left (packaging/test-deb.sh; it purges even when a check fails). Root only: it
# changes the machine, so it skips, before building anything, for anyone else.
test-deb:
	@if [ "$$(id -u)" != 0 ]; then \
	  echo "test-deb: SKIPPED: installing a package needs root (run: sudo make test-deb)"; \
	else \
	  $(MAKE) deb && $(MAKE) deps-deb-test && packaging/test-deb.sh $(DEB); \
	fi

deps-deb-test:
	$(call apt_install,$(APT_DEB_TEST_PACKAGES),--no-install-recommends)

test-short: deps-bonmin
	$(GO) test -short -count=1 ./...

bench: deps-bonmin
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

demo: build
	./scripts/demo.sh

clean:
	rm -rf bin build gbdmpc_*.deb
