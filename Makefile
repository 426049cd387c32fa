# gbdmpc — set-up, build, test and demo.
#
# `make demo` and `make test` install whatever is missing on a fresh Debian 12 machine (apt packages
# and Go modules) before they build, so a new user needs nothing but these two commands.

SHELL := /bin/bash
GO    ?= go
BIN   := bin/gbdmpc

APT_PACKAGES      := coinor-libipopt-dev coinor-libcbc-dev pkg-config gcc
APT_TEST_PACKAGES := mosquitto

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

# Root installs directly; anyone else goes through sudo.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: all deps deps-test build test test-short bench demo vet clean

all: build

# deps installs the system packages the build links against, only when one is missing, then the Go
# modules listed in go.sum.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	$(GO) mod download

deps-test: deps
	@missing=""; for p in $(APT_TEST_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/gbdmpc

vet: deps
	$(GO) vet ./...

# The whole suite. Long experiments are commands (see README), not tests.
test: deps-test vet
	$(GO) test -count=1 -timeout 45m ./...

test-short: deps
	$(GO) test -short -count=1 ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

demo: build
	./scripts/demo.sh

clean:
	rm -rf bin
