# Ferry: `make run` runs the daemon with its defaults, `make test` runs every test. Both install what the build
# needs first (Debian packages, through apt-get, as root or with sudo).
SWIFT ?= swift
# `time`: /usr/bin/time, with which a CLI test measures the CLI's own peak memory. `imagemagick`: a test makes an
# animated GIF with its /usr/bin/convert. `systemd`: systemd-socket-activate and systemd-analyze (the units' tests;
# no systemd runs). `zsh`, `fish`: the completion scripts are checked by each shell. `man-db`: man pages rendered. `prometheus`: promtool checks
# the metrics, and a real Prometheus scrapes a daemon once. `tmux`: ferry top is driven in a real terminal.
APT_PACKAGES := libuv1-dev libsqlite3-dev libcurl4-openssl-dev libvips-dev libvips-tools imagemagick pkg-config python3 openssl ca-certificates time nginx curl systemd zsh fish man-db prometheus tmux libhiredis-dev redis-server redis-tools
# Warnings fail the build: the project promises a warning-free Swift 6 build.
SWIFT_FLAGS := -Xswiftc -warnings-as-errors

.PHONY: all deps build release run test test-swift test-python fuzz fuzz-smoke bench clean install install-files uninstall

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
	SWIFT_FLAGS="$(SWIFT_FLAGS)" SKIP_BUILD=1 bash bench/fleet.sh

clean:
	rm -rf .build bench-results

# `make install` (PREFIX=/usr/local, DESTDIR for packaging): the two programs, man pages ferry(1) and ferryd(8),
# bash/zsh/fish completions (made by the programs from their option tables), the systemd units (user and system;
# @BINDIR@ becomes where ferryd went) and an example configuration. `make uninstall` removes exactly those files.
# `install-files` installs what is built already (FERRY_BIN: the directory holding ferry and ferryd).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
SYSTEMD_USER_DIR ?= $(PREFIX)/lib/systemd/user
SYSTEMD_SYSTEM_DIR ?= $(PREFIX)/lib/systemd/system
BASH_COMPLETION_DIR ?= $(PREFIX)/share/bash-completion/completions
ZSH_COMPLETION_DIR ?= $(PREFIX)/share/zsh/site-functions
FISH_COMPLETION_DIR ?= $(PREFIX)/share/fish/vendor_completions.d
DOC_DIR ?= $(PREFIX)/share/doc/ferry
INSTALLED := $(BINDIR)/ferryd $(BINDIR)/ferry $(MANDIR)/man8/ferryd.8 $(MANDIR)/man1/ferry.1 \
	$(SYSTEMD_USER_DIR)/ferryd.socket $(SYSTEMD_USER_DIR)/ferryd.service \
	$(SYSTEMD_SYSTEM_DIR)/ferryd.socket $(SYSTEMD_SYSTEM_DIR)/ferryd.service \
	$(BASH_COMPLETION_DIR)/ferry $(BASH_COMPLETION_DIR)/ferryd $(ZSH_COMPLETION_DIR)/_ferry $(ZSH_COMPLETION_DIR)/_ferryd \
	$(FISH_COMPLETION_DIR)/ferry.fish $(FISH_COMPLETION_DIR)/ferryd.fish $(DOC_DIR)/ferryd.conf.example

install: release
	$(MAKE) --no-print-directory install-files FERRY_BIN="$$($(SWIFT) build -c release --show-bin-path)"

install-files:
	@test -x "$(FERRY_BIN)/ferryd" -a -x "$(FERRY_BIN)/ferry" || { echo "FERRY_BIN=$(FERRY_BIN) holds no ferry and ferryd (make install builds them)"; exit 1; }
	install -D -m 755 "$(FERRY_BIN)/ferryd" "$(DESTDIR)$(BINDIR)/ferryd"
	install -D -m 755 "$(FERRY_BIN)/ferry" "$(DESTDIR)$(BINDIR)/ferry"
	install -D -m 644 Sources/ferryd/dist/ferryd.8 "$(DESTDIR)$(MANDIR)/man8/ferryd.8"
	install -D -m 644 Sources/ferry/dist/ferry.1 "$(DESTDIR)$(MANDIR)/man1/ferry.1"
	@for kind in user system; do \
	  if [ $$kind = user ]; then dir="$(DESTDIR)$(SYSTEMD_USER_DIR)"; else dir="$(DESTDIR)$(SYSTEMD_SYSTEM_DIR)"; fi; \
	  mkdir -p "$$dir"; \
	  for unit in ferryd.socket ferryd.service; do \
	    sed 's|@BINDIR@|$(BINDIR)|g' "Sources/ferryd/dist/systemd/$$kind/$$unit" > "$$dir/$$unit" && chmod 644 "$$dir/$$unit"; \
	    echo "installed $$dir/$$unit"; \
	  done; \
	done
	mkdir -p "$(DESTDIR)$(BASH_COMPLETION_DIR)" "$(DESTDIR)$(ZSH_COMPLETION_DIR)" "$(DESTDIR)$(FISH_COMPLETION_DIR)"
	"$(FERRY_BIN)/ferry" completions bash > "$(DESTDIR)$(BASH_COMPLETION_DIR)/ferry"
	"$(FERRY_BIN)/ferryd" --completions bash > "$(DESTDIR)$(BASH_COMPLETION_DIR)/ferryd"
	"$(FERRY_BIN)/ferry" completions zsh > "$(DESTDIR)$(ZSH_COMPLETION_DIR)/_ferry"
	"$(FERRY_BIN)/ferryd" --completions zsh > "$(DESTDIR)$(ZSH_COMPLETION_DIR)/_ferryd"
	"$(FERRY_BIN)/ferry" completions fish > "$(DESTDIR)$(FISH_COMPLETION_DIR)/ferry.fish"
	"$(FERRY_BIN)/ferryd" --completions fish > "$(DESTDIR)$(FISH_COMPLETION_DIR)/ferryd.fish"
	install -D -m 644 Sources/ferryd/dist/ferryd.conf "$(DESTDIR)$(DOC_DIR)/ferryd.conf.example"

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
