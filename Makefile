# Ferry: `make run` runs the daemon with its defaults, `make test` runs every test. Both install what the build
# needs first (Debian packages, through apt-get, as root or with sudo).
SWIFT ?= swift
# `time`: /usr/bin/time, with which a CLI test measures the CLI's own peak memory. `imagemagick`: a test makes an
# animated GIF with its /usr/bin/convert.
APT_PACKAGES := libuv1-dev libsqlite3-dev libcurl4-openssl-dev libssl-dev libvips-dev libvips-tools imagemagick pkg-config python3 openssl ca-certificates time nginx curl
# Warnings fail the build: the project promises a warning-free Swift 6 build.
SWIFT_FLAGS := -Xswiftc -warnings-as-errors

.PHONY: all deps build release run test test-swift test-python fuzz fuzz-smoke bench clean

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
	$(MAKE) --no-print-directory test-swift test-python fuzz-smoke

test-swift:
	$(SWIFT) test --skip-build

test-python:
	FERRYD="$$($(SWIFT) build --show-bin-path)/ferryd" python3 -m unittest discover -s Clients/python/tests -t Clients/python -v
	python3 -m unittest discover -s Tests/Origin -v

# libFuzzer on the parsers of what clients and origins send (frames, JSON, HTTP headers, image headers), seeded
# from Tests/Fuzz/corpus; new inputs go to FUZZ_OUT, crashes to FUZZ_OUT/crash-*. `make fuzz` runs each for
# FUZZ_SECONDS (default 60); `make test` runs each for 5 s.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := frames json http image
FUZZ_OUT ?= $(CURDIR)/.build/fuzz-out
FUZZ_FLAGS := -c release --product ferry-fuzz --build-path .build/fuzz -Xswiftc -sanitize=fuzzer,address \
	-Xswiftc -parse-as-library -Xswiftc -DFERRY_FUZZ

fuzz: deps
	$(SWIFT) build $(FUZZ_FLAGS)
	@bin="$$($(SWIFT) build $(FUZZ_FLAGS) --show-bin-path)/ferry-fuzz"; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p "$(FUZZ_OUT)/$$t"; echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  FERRY_FUZZ_TARGET=$$t "$$bin" -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix="$(FUZZ_OUT)/$$t/crash-" "$(FUZZ_OUT)/$$t" Tests/Fuzz/corpus/$$t > "$(FUZZ_OUT)/$$t.log" 2>&1; \
	  status=$$?; \
	  grep -E "DONE|number_of_executed_units|ERROR|SUMMARY|Test unit written" "$(FUZZ_OUT)/$$t.log"; \
	  if [ $$status -ne 0 ]; then tail -40 "$(FUZZ_OUT)/$$t.log"; exit $$status; fi; \
	done

fuzz-smoke:
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=5

bench: deps
	SWIFT_FLAGS="$(SWIFT_FLAGS)" bash bench/run.sh
	SWIFT_FLAGS="$(SWIFT_FLAGS)" SKIP_BUILD=1 bash bench/fetch.sh

clean:
	rm -rf .build bench-results
