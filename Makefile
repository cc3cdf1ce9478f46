# The two user commands: `make run` and `make test`. Everything else is a helper of theirs.
BUILD_DIR ?= build
CONFIG ?= configs/tiny.json
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: run test build setup configure clean screenshots fuzz test-asan install

setup:
	@bash scripts/setup-system.sh
	@bash scripts/setup-torch.sh >/dev/null

configure: setup
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS); \
	fi

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Opens the workbench on the default config; with no display, trains it headless.
run: build
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ] && [ -x $(BUILD_DIR)/bin/trainbench ]; then \
	  $(BUILD_DIR)/bin/trainbench $(CONFIG); \
	else \
	  echo "No display: training $(CONFIG) headless (trainbench-cli run)"; \
	  $(BUILD_DIR)/bin/trainbench-cli run $(CONFIG); \
	fi

test: build
	@cd $(BUILD_DIR) && QT_QPA_PLATFORM=offscreen TRAINBENCH_REQUIRE_REFERENCES=1 ctest --output-on-failure -j 1

# Installs both programs, the configs, the desktop entry and the icons under PREFIX
# (default ~/.local: bin/ on the PATH, share/applications/ in the desktop's menus).
PREFIX ?= $(HOME)/.local
install: build
	@cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# The pictures of docs/images, remade from a fresh store.
screenshots: build
	@bash scripts/screenshots.sh

# Engine, CLI and their tests under AddressSanitizer + UndefinedBehaviorSanitizer (no GUI).
# Leak checking is off: LibTorch keeps process-lifetime allocations LeakSanitizer would list.
test-asan: setup
	@if [ ! -f build-asan/build.ninja ]; then \
	  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINBENCH_SANITIZE=ON \
	    -DTRAINBENCH_BUILD_GUI=OFF -DTRAINBENCH_BUILD_BENCH=OFF; \
	fi
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j 1 -LE slow

# The input readers under libFuzzer with ASan + UBSan (clang), FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 60
fuzz:
	@bash scripts/setup-system.sh clang libclang-rt-14-dev
	@if [ ! -f build-fuzz/build.ninja ]; then \
	  cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++; \
	fi
	@cmake --build build-fuzz -j $(JOBS)
	@bash scripts/run-fuzz.sh $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD_DIR)
