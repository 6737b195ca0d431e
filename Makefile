# Ferry: `make run` runs the daemon with its defaults, `make test` runs every test. Both install what the build
# needs first (Debian packages, through apt-get, as root or with sudo).
SWIFT ?= swift
APT_PACKAGES := libuv1-dev libsqlite3-dev libcurl4-openssl-dev pkg-config python3 openssl ca-certificates
# Warnings fail the build: the project promises a warning-free Swift 6 build.
SWIFT_FLAGS := -Xswiftc -warnings-as-errors

.PHONY: all deps build release run test test-swift test-python bench clean

all: build

deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo=sudo; fi; \
	  echo "installing:$$missing"; \
	  $$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q $$missing; \
	fi

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)

run: release
	"$$($(SWIFT) build -c release --show-bin-path)/ferryd"

test: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	@# Some strict-concurrency diagnostics appear only in optimised builds.
	$(SWIFT) build -c release $(SWIFT_FLAGS)
	$(MAKE) --no-print-directory test-swift test-python

test-swift:
	$(SWIFT) test --skip-build

test-python:
	FERRYD="$$($(SWIFT) build --show-bin-path)/ferryd" python3 -m unittest discover -s Clients/python/tests -t Clients/python -v
	python3 -m unittest discover -s Tests/Origin -v

bench: deps
	SWIFT_FLAGS="$(SWIFT_FLAGS)" bash bench/run.sh
	SWIFT_FLAGS="$(SWIFT_FLAGS)" SKIP_BUILD=1 bash bench/fetch.sh

clean:
	rm -rf .build bench-results
