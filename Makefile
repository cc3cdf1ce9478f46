# The two user commands: `make run` and `make test`. Everything else is a helper of theirs.
BUILD_DIR ?= build
CONFIG ?= configs/tiny.json
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: run test build setup configure clean gui-screenshot

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
	@cd $(BUILD_DIR) && QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j 1

clean:
	rm -rf $(BUILD_DIR)
