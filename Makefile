# Jiffy top-level commands. `make test` and `make demo` work from a clean clone on Debian 12:
# they install what is missing (apt-get), build, and run.
#   make test      build plain (-Werror), ASan+UBSan and TSan, run the CTest suite on each,
#                  and check that an installed Jiffy builds and runs the C and C++ examples
#                  (pkg-config, find_package(Jiffy), static)
#   make demo      build the servers, the load generator and the peers, then the short
#                  head-of-line-blocking sweep (experiments/configs/demo.toml): prints the
#                  "highest load meeting the SLO" table and where the plots are
#   make demo-http the head-of-line web server of preemptible functions (libinger Fig. 4,
#                  docs/pfn-http.md): jiffy-httpd with budgets, without, and a pthread pool,
#                  under oha (built once from the crates registry); ~5 min, a table and a plot
#   make demo-bomb the decompression-bomb demo of preemptible functions (docs/pfn-bomb.md):
#                  zlib under jf_pfn_launch() per mechanism, against pthread_cancel and fork+kill,
#                  and zlib built with probes (scripts/zlib-probes.sh); prints the table, writes
#                  docs/img/pfn_bomb.png (~2-3 min)
#   make bench     the full benchmark table (Jiffy vs Boost.Fiber, Go, pthreads), the
#                  synchronization primitives' tables beside the same peers and Skyloft Table 7
#                  (bench/run_sync.sh, ~1 min), the
#                  idle-spin measurement, the preemption benchmarks and the wakeup-latency
#                  benchmark per policy (schbench)
#   make perfcheck instructions per operation (yield, switch, spawn+join, mutex and condvar
#                  handoff, cross-worker wake) counted with Valgrind under none and auto, against
#                  the committed budget bench/perfcheck.budget: +2 % fails (part of make test, ~10 s)
#   make calibrate jiffy-calibrate: the smallest quantum per mechanism on this machine
#   make fuzz-smoke the libFuzzer targets of fuzz/ (RESP, the UDP protocol, JIFFY_*, jiffy-sim's
#                  --dist and --arrivals), built with clang-14 in build-fuzz/ and run 5 s each
#                  from a copy of the seed corpus; fails on any crash (part of make test, <1 min)
#   make fuzz      the same for FUZZ_SECONDS each (default 300), keeping the grown corpus in
#                  build-fuzz/campaign/ (docs/fuzzing.md)
#   make soak      the long campaigns CI samples (run weekly): the core, sync and net suites under
#                  every policy and mechanism (tests/stress/policy_matrix.sh), the park/wake
#                  stress, 1,000 runs per park mode under CPU hogs (tests/stress/parkwake.sh), and
#                  the flake hunt: every core, sync, net and preempt test SOAK_RUNS (200) times
#                  beside two nice-19 CPU hogs, plain and ASan builds, failures counted per test
#                  (tests/stress/flake_hunt.py; its table goes in docs/reliability.md). Days on
#                  2 vCPUs at 200 runs: SOAK_RUNS=20 samples it in hours
#   make model     the park/wake handshake checked exhaustively by SPIN in every configuration
#                  of tools/model/park.pml (~3 min, ~4 GB; CTest model.park runs the quick set)
#   make docs      the API reference (HTML in build/docs/html) from the public headers' kernel-doc
#                  comments, with Doxygen; fails on any warning (scripts/api-docs.sh)
#   make install   PREFIX=/usr/local (default)
JOBS    ?= $(shell nproc)
PREFIX  ?= /usr/local
BUILD   ?= build
ASAN    ?= build-asan
TSAN    ?= build-tsan
FUZZ    ?= build-fuzz
FUZZ_SECONDS ?= 300
SOAK_RUNS ?= 200
CMAKE   := cmake -G Ninja -DJIFFY_WERROR=ON

.PHONY: docs calibrate all deps build build-asan build-tsan test test-plain test-asan test-tsan test-install \
	demo demo-http demo-bomb bench install clean fuzz fuzz-smoke model soak perfcheck

all: build

deps:
	@scripts/deps.sh build

build: deps
	@$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@$(CMAKE) -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug -DJIFFY_SANITIZE=address,undefined \
		-DJIFFY_BUILD_BENCH=OFF >/dev/null
	@cmake --build $(ASAN) -j $(JOBS)

build-tsan: deps
	@$(CMAKE) -S . -B $(TSAN) -DCMAKE_BUILD_TYPE=Debug -DJIFFY_SANITIZE=thread \
		-DJIFFY_BUILD_BENCH=OFF -DJIFFY_BUILD_APPS=OFF >/dev/null
	@cmake --build $(TSAN) -j $(JOBS)

test-plain: build
	@echo "== test suite (RelWithDebInfo) =="
	@ctest --test-dir $(BUILD) --output-on-failure -j 2

test-asan: build-asan
	@echo "== test suite (AddressSanitizer + UndefinedBehaviorSanitizer) =="
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ctest --test-dir $(ASAN) --output-on-failure -j 2

test-tsan: build-tsan
	@echo "== test suite (ThreadSanitizer) =="
	@TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest --test-dir $(TSAN) --output-on-failure -j 2

test-calibrate: build
	@$(BUILD)/tools/jiffy-calibrate

test-install: build
	@echo "== install: the C and C++ examples via pkg-config, find_package(Jiffy) and libjiffy.a =="
	@scripts/test-install.sh $(BUILD)

test: test-plain perfcheck test-asan test-tsan test-install fuzz-smoke

# The hot path's instruction budget (scripts/perfcheck.sh, bench/perfcheck.budget): instructions
# per yield, switch, spawn+join, mutex and condvar handoff and cross-worker wake, counted with
# Valgrind under none and auto; fails when one exceeds its budget by more than 2 %.
perfcheck: build
	@echo "== perfcheck: instructions per operation against bench/perfcheck.budget =="
	@scripts/perfcheck.sh $(BUILD)

fuzz-smoke: deps
	@echo "== fuzz: each libFuzzer target for 5 s (fuzz/, docs/fuzzing.md) =="
	@fuzz/run.sh smoke 5 $(FUZZ)

fuzz: deps
	@fuzz/run.sh campaign $(FUZZ_SECONDS) $(FUZZ)

model: deps
	@tools/model/check.sh full

soak: build build-asan
	@echo "== the policy x mechanism matrix (tests/stress/policy_matrix.sh) =="
	@tests/stress/policy_matrix.sh $(BUILD)
	@echo "== park/wake under CPU hogs (tests/stress/parkwake.sh) =="
	@tests/stress/parkwake.sh $(BUILD)/tests/test_core_parkwake 1000
	@echo "== the flake hunt: $(SOAK_RUNS) runs of every core/sync/net/preempt test (tests/stress/flake_hunt.py) =="
	@python3 tests/stress/flake_hunt.py --runs $(SOAK_RUNS) --markdown $(BUILD)/flake-hunt.md $(BUILD) $(ASAN)

demo: build
	@scripts/deps.sh bench
	@echo "== building jiffy-load (Rust) and the Go and Tokio peers =="
	@JIFFY_LOAD=$$(scripts/build-load.sh) && scripts/build-peers.sh >/dev/null && \
		PY=$$(scripts/venv.sh) && \
		echo "== the head-of-line-blocking sweep (experiments/configs/demo.toml) ==" && \
		$$PY experiments/run.py demo --build $(BUILD) --load $$JIFFY_LOAD

demo-http: build
	@echo "== oha, the open-loop HTTP load generator (crates registry; built once) =="
	@OHA=$$(scripts/build-oha.sh) && PY=$$(scripts/venv.sh) && \
		echo "== the head-of-line web-server sweep (experiments/http_hol.py, docs/pfn-http.md) ==" && \
		$$PY experiments/http_hol.py --build $(BUILD) --oha $$OHA --max-other 1.1 --max-retries 12

demo-bomb: build
	@echo "== zlib from source, with and without Jiffy's probe pass (scripts/zlib-probes.sh) =="
	@scripts/zlib-probes.sh $(BUILD) >/dev/null || \
		echo "   (no pfn-bomb-probes: the probe variants are skipped)"
	@PY=$$(scripts/venv.sh) && \
		echo "== the decompression bomb (experiments/pfn_bomb.py) ==" && \
		$$PY experiments/pfn_bomb.py --build $(BUILD)

bench: build
	@scripts/deps.sh bench
	@BENCH_OUT=$(BUILD)/bench/core.tsv bench/run.sh $(BUILD)
	@echo "== synchronization primitives beside Boost.Fiber, Go and pthreads; Skyloft Table 7 (docs/performance.md, "Synchronization primitives against peers") =="
	@BENCH_CORE=$(BUILD)/bench/core.tsv bench/run_sync.sh $(BUILD)
	@echo "== idle spin before parking (JIFFY_SPIN_US) =="
	@$(BUILD)/bench/idle_spin
	@echo "== preemption: signal floor, per-preemption cost, slowdown vs quantum, timeliness, dispatcher =="
	@$(BUILD)/bench/preempt_bench
	@echo "== resume path: rt_sigreturn vs restoring by hand =="
	@$(BUILD)/bench/resume_path
	@echo "== wakeup latency per policy beside Linux threads (schbench-like) =="
	@$(BUILD)/bench/schbench
	@echo "== preemptible functions: libinger's Table 2 beside its peers, budgets kept (docs/pfn.md) =="
	@$(BUILD)/bench/pfn_bench

calibrate: build
	@$(BUILD)/tools/jiffy-calibrate

docs:
	@command -v doxygen >/dev/null || scripts/deps.sh build
	@scripts/api-docs.sh $(BUILD)/docs

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN) $(TSAN) $(FUZZ)
