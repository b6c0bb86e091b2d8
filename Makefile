# The two entry points: `make demo` (the main job) and `make test` (all CPU tests).
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build test test-gpu demo format clean

all: build

bootstrap:
	@./scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD) -LE gpu --output-on-failure -j $(JOBS)

# GPU tests (label `gpu`); each skips cleanly without a device.
test-gpu: build
	@ctest --test-dir $(BUILD) -L gpu --output-on-failure

demo: build
	@./scripts/demo.sh $(BUILD)

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	@rm -rf $(BUILD)
