# DeltaFlash — one entry point for building, testing and benchmarking.
#
#   make run     the main job: TPC-C with no IPA vs IPA [2x3] on the paper-emulator device
#   make test    everything CI runs: format check, clippy (warnings denied), all tests, fuzz pass,
#                the Python package's pytest suite
#   make bench   the speed benchmarks recorded in docs/benchmarks.md
#   make long    long kill -9, bit-rot and power-cut runs, and every paper's experiment at the
#                quick scale (`reproduce --all --quick`; not in make test)
#   make reproduce-full
#                every paper's experiment at the papers' scale into docs/results/full
#                (resumable: run it again after an interruption; the finished runs
#                kept there are committed, so any checkout resumes where it stopped)

CARGO ?= cargo
# Cases per fuzz_* property test in `make fuzz` (the plain test run uses 256).
FUZZ_CASES ?= 4096
BIN := target/release/deltaflash

.PHONY: all test deps fmt-check clippy doc unit fuzz browser-test screenshots python-test build run bench long reproduce-full

all: build

deps:
	@command -v $(CARGO) >/dev/null || { echo "error: cargo not found; install a stable Rust toolchain (rustup)"; exit 1; }
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy

test: deps fmt-check clippy doc unit fuzz browser-test python-test

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

# The API docs build without a warning (broken or private links, ambiguous names).
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked

unit:
	$(CARGO) test --workspace --locked

# Stable-Rust stand-in for cargo-fuzz (which needs nightly): the property tests named
# fuzz_* throw arbitrary bytes at every decoder (device images, OOB pages, region
# layouts, traces), and the model tests drive random operation sequences with power cuts.
# Every cargo call here and in browser-test selects the whole workspace, as `unit` does:
# selecting one package (`-p flash`) unifies dependency features differently and
# recompiles about 30 crates.
fuzz:
	PROPTEST_CASES=$(FUZZ_CASES) $(CARGO) test --workspace --locked fuzz_
	PROPTEST_CASES=1024 $(CARGO) test --workspace --locked --test model

# The dashboard (`deltaflash serve`) in a real browser: Debian's chromium driven by
# playwright-core (scripts/setup-browser.sh installs both), on the debug binary that
# the workspace test build links for the CLI's tests; screenshots go to
# target/screenshots/, or with `make screenshots` to the README's in docs/figures/.
browser-test:
	scripts/setup-browser.sh
	$(CARGO) test --workspace --locked --no-run
	cd web/tests && DELTAFLASH_BIN=$(CURDIR)/target/debug/deltaflash node --test dashboard.test.mjs

screenshots:
	$(MAKE) browser-test SCREENSHOTS=$(CURDIR)/docs/figures

# The Python package: a virtualenv under target/ (reused while python/requirements-test.txt
# is unchanged), the wheel built with maturin, pytest with a local 2-worker Ray instance.
python-test:
	scripts/python-test.sh

# Long reliability runs, not in `make test`: 300 kill -9 sessions, 10,000 bit-rot seeds,
# 2,000 power cuts per torture configuration (NoFTL, IPL, SQLite), 500 per FTL with DB
# pages of two and four flash pages (torn-page protection); then every paper's experiment
# at the quick scale into out/reproduce-quick (runs kept there are reused).
long: build
	DELTAFLASH_KILL9_ITERATIONS=300 $(CARGO) test -p deltaflash-cli --locked --test kill9
	CORRUPTION_SEEDS=10000 $(CARGO) test -p flash --locked --test corruption
	INTEGRITY_CASES=1000 $(CARGO) test -p flash --locked --test integrity
	INTEGRITY_CASES=1000 $(CARGO) test -p sqlite-flash --locked --test integrity
	$(BIN) torture --cuts 2000 --seed 1
	$(BIN) torture --cuts 2000 --seed 1 --ipa 0x0
	$(BIN) torture --cuts 1000 --seed 1 --page-bytes 2048 --db-page-bytes 8192 --blocks-per-chip 128
	$(BIN) torture --cuts 2000 --seed 1 --storage ipl
	for ftl in page dftl block bast fast; do for db_page in 8192 16384; do \
		$(BIN) torture --cuts 500 --seed 1 --storage ftl:$$ftl --db-page-bytes $$db_page || exit 1; done; done
	$(BIN) torture --cuts 2000 --seed 1 --engine sqlite
	$(BIN) torture --cuts 500 --seed 1 --engine sqlite --journal delete
	$(BIN) reproduce --all --quick --out out/reproduce-quick

# The papers' tables and figures at the papers' scale; the CPU seconds per experiment are
# in each report and at the end. Finished runs are kept in the output directory, so an
# interrupted invocation resumes where it stopped. They take about 23 CPU hours, more
# than one machine's day may give, so the directory is in the repository: its runs
# (docs/results/full/runs/KEY.json) are committed as they finish, its reports are not.
reproduce-full: build
	$(BIN) reproduce --all --full --out docs/results/full

build:
	$(CARGO) build --release --locked

run: build
	@mkdir -p out
	$(BIN) compare --workload tpcc --warehouses 1 --schemes 0x0,2x3 --sim-time 60 --warmup 10 \
		--blocks-per-chip 96 --check --progress 10 | tee out/compare.md

# Whole runs (the tables in docs/benchmarks.md), then the criterion micro-benchmarks of
# the device model and the page-FTL write path (reports in target/criterion/).
bench: build
	scripts/bench.sh
	scripts/engine-bench.sh
	$(CARGO) bench --locked -p nand -p flash
