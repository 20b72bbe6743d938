# DeltaFlash — one entry point for building, testing and benchmarking.
#
#   make run     the main job: TPC-C with no IPA vs IPA [2x3] on the paper-emulator device
#   make test    everything CI runs: format check, clippy (warnings denied), all tests, fuzz pass
#   make bench   the speed benchmarks recorded in docs/benchmarks.md

CARGO ?= cargo
# Cases per fuzz_* property test in `make fuzz` (the plain test run uses 256).
FUZZ_CASES ?= 4096
BIN := target/release/deltaflash

.PHONY: all test deps fmt-check clippy unit fuzz build run bench

all: build

deps:
	@command -v $(CARGO) >/dev/null || { echo "error: cargo not found; install a stable Rust toolchain (rustup)"; exit 1; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy

test: deps fmt-check clippy unit fuzz

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

unit:
	$(CARGO) test --workspace --locked

# Stable-Rust stand-in for cargo-fuzz (which needs nightly): the property tests named
# fuzz_* throw arbitrary bytes at every decoder (device images, OOB pages, region
# layouts, traces), and the model tests drive random operation sequences with power cuts.
fuzz:
	PROPTEST_CASES=$(FUZZ_CASES) $(CARGO) test --workspace --locked fuzz_
	PROPTEST_CASES=1024 $(CARGO) test -p flash --locked --test model

build:
	$(CARGO) build --release --locked

run: build
	@mkdir -p out
	$(BIN) compare --workload tpcc --warehouses 1 --schemes 0x0,2x3 --sim-time 60 --warmup 10 \
		--blocks-per-chip 96 --check | tee out/compare.md

bench: build
	scripts/bench.sh
	scripts/engine-bench.sh
