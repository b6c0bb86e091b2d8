# The two entry points: `make demo` (the main job) and `make test` (all CPU tests).
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build test test-gpu test-aarch64 test-deb-boot demo format clean

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

# The aarch64 cross build and its CPU tests under qemu-user (scripts/cross/aarch64.sh).
test-aarch64:
	@./scripts/cross/aarch64.sh build-aarch64

# The .deb on a booted Debian 12 under qemu-system (root; tests/deploy/deb_boot_check.sh).
test-deb-boot: build
	@./tests/deploy/deb_boot_check.sh $(BUILD) && cp /var/tmp/cake-deb-boot/transcript.txt deb-boot-transcript.txt

demo: build
	@./scripts/demo.sh $(BUILD)

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	@rm -rf $(BUILD)
