# Two commands on a fresh machine: `make demo` and `make test`. Each bootstraps a local
# virtualenv (.venv) and builds the Rust extension into it with `maturin develop --release`.

VENV    ?= .venv
PY      := $(VENV)/bin/python
DEPS    := $(VENV)/.deps-installed
BUILT   := $(VENV)/.native-built
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

RUST_SOURCES := $(shell find src -name '*.rs') Cargo.toml Cargo.lock pyproject.toml

.PHONY: all build demo test lint test-rust test-python wheel-test bench profile fuzz clean spark-test browser-test

all: build

$(PY):
	python3 -m venv $(VENV)

$(DEPS): $(PY) pyproject.toml
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "maturin>=1.9,<2" "orjson>=3.9" "rich>=13" "pytest>=8" "hypothesis>=6.100" "pytest-benchmark>=4" "matplotlib>=3.7" "mypy>=1.18" "textual>=8" "pyte>=0.8" "regex>=2024.4" "types-regex"
	$(PY) -m pip install -q "pyarrow>=15" "duckdb>=1.1" "polars>=1.0"
	$(PY) -m pip install -q "pi-agent-harness-lc==$(PEER_VERSION)" "pytest-asyncio>=0.24" \
		"openai-agents>=0.24" "langgraph>=1.2" "langgraph-checkpoint>=4.3" \
		"langgraph-checkpoint-conformance>=0.0.2"
	touch $@

# A peer's session tests (tests/test_peer_harness.py): pi-agent-harness-lc's source
# distribution from PyPI (its tests are not in the wheel), unpacked into the venv.
PEER_VERSION := 0.6.0
PEER := $(VENV)/peer/pi_agent_harness_lc-$(PEER_VERSION)
$(PEER): $(DEPS)
	$(PY) -m pip download -q --no-deps --no-binary :all: "pi-agent-harness-lc==$(PEER_VERSION)" -d $(VENV)/peer
	tar -xzf $(VENV)/peer/pi_agent_harness_lc-$(PEER_VERSION).tar.gz -C $(VENV)/peer
	touch $@

# The extension is built for the stable ABI (one `_sessiontree.abi3.so` for every CPython
# >= 3.10); a per-version `_sessiontree.cpython-*.so` left by an older build would be
# imported before it, so it goes.
$(BUILT): $(DEPS) $(RUST_SOURCES)
	rm -f python/sessiontree/_sessiontree.cpython-*.so
	$(VENV)/bin/maturin develop --release --quiet
	touch $@

build: $(BUILT)

# Lint gate first: formatting, then clippy on the core alone and with the PyO3 layer.
test-rust:
	cargo fmt --check
	cargo clippy --all-targets --quiet -- -D warnings
	cargo clippy --all-targets --features python --quiet -- -D warnings
	cargo test --no-default-features --quiet

# Tests that take the `backend` fixture run on both backends in one pass; the second
# pass runs the command line (whose default is `auto` = native) on the python backend.
test-python: $(BUILT) $(PEER)
	$(PY) -m mypy.stubtest sessiontree._sessiontree
	$(PY) -m pytest -q -p no:cacheprovider tests benches --benchmark-disable
	SESSIONTREE_BACKEND=python $(PY) -m pytest -q -p no:cacheprovider tests/test_cli.py

# The lint gate: the package type-checks with zero errors, also against the oldest Python it
# supports (3.10: typing.NotRequired is typing_extensions there), and so do the README's examples;
# the layers hold (tests/test_layers.py: no layer break, no import cycle, the table in
# docs/ARCHITECTURE.md current); docs/CONTRACT.md is cited by sections it has
# (tests/test_docs.py).
lint: $(BUILT)
	$(PY) -m mypy python/sessiontree
	$(PY) -m mypy --python-version 3.10 python/sessiontree
	$(PY) tests/readme_examples.py --typecheck
	$(PY) -m pytest -q -p no:cacheprovider tests/test_layers.py tests/test_docs.py

test: lint test-rust test-python

# The wheel a user installs (tests/test_wheel.py, also part of `make test`): `maturin build
# --release` (the cargo cache of `make build`: no recompile), then the one cp310-abi3 wheel
# installed into a fresh virtualenv of each CPython found here (this one, and the oldest and
# newest >= 3.10 that pyenv has) with its dependencies from PyPI, and run there.
wheel-test: $(BUILT)
	$(PY) -m pytest -q -p no:cacheprovider -rs tests/test_wheel.py

demo: $(BUILT)
	$(PY) -m sessiontree.demo

# Benchmarks (benches/, docs/BENCHMARKS.md): sizes up to BENCH_MAX (1MB 10MB 100MB 1GiB);
# generated sessions are cached in $$SESSIONTREE_BENCH_CACHE or ~/.cache/sessiontree-bench.
BENCH_MAX    ?= 100MB
BENCH_ARGS   ?=
PROFILE_SIZE ?= 1GiB

bench: $(BUILT)
	mkdir -p bench-results
	$(PY) -m pytest -q -p no:cacheprovider benches --benchmark-only --bench-size=$(BENCH_MAX) \
		--benchmark-group-by=group --benchmark-sort=name --benchmark-columns=min,median,mean,stddev,rounds \
		--benchmark-json=bench-results/latest.json $(BENCH_ARGS); rc=$$?; \
	$(PY) benches/report.py bench-results/latest.json --command "make bench BENCH_MAX=$(BENCH_MAX)"; \
	exit $$rc

# Spark reading the Parquet export (tests/test_spark.py): pyspark from PyPI (~300 MB) and
# a Java runtime (Java 17 here; Debian: apt-get install openjdk-17-jre-headless).
spark-test: $(BUILT)
	$(PY) -m pip install -q "pyspark>=3.5"
	$(PY) -m pytest -q -p no:cacheprovider tests/test_spark.py

# The long runs of the differential fuzzer and the crash harness (short runs of both are
# part of `make test`: tests/test_fuzz_short.py). A failing fuzz case is written to
# fuzz-failures/; FUZZ_SEED / CRASH_SEED repeat a run.
FUZZ_RUNS  ?= 3000
CRASH_RUNS ?= 300
FUZZ_SEED  ?= $(shell od -An -N2 -tu2 /dev/urandom | tr -d ' ')
CRASH_SEED ?= $(FUZZ_SEED)

fuzz: $(BUILT)
	$(PY) tests/fuzz_differential.py --runs $(FUZZ_RUNS) --seed $(FUZZ_SEED)
	$(PY) tests/crash_harness.py --runs $(CRASH_RUNS) --seed $(CRASH_SEED)

profile: $(BUILT)
	$(PY) -m pip install -q "py-spy>=0.3"
	$(PY) benches/profile_native.py --size $(PROFILE_SIZE)

# The parts that need a browser or a terminal multiplexer: Debian's Chromium and tmux
# (apt, root or sudo), Playwright for Python (driving that Chromium), then the tests that
# use them. `make test` runs the same tests and skips, with the reason, what is missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

browser-test: $(BUILT)
	@command -v chromium >/dev/null && command -v tmux >/dev/null || \
		{ $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium tmux; }
	$(PY) -m pip install -q "playwright>=1.40"
	$(PY) -m pytest -q -p no:cacheprovider -rs tests/test_export_browser.py tests/test_browse.py

clean:
	rm -rf $(VENV) target bench-results/*.json bench-results/profile python/sessiontree/_sessiontree.*so
