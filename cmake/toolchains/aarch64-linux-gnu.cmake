# Cross-compiling for aarch64 (the GB10 runs DGX OS, an arm64 Ubuntu) on a Debian amd64 host with
# crossbuild-essential-arm64 and the arm64 multiarch -dev packages (libgrpc++-dev:arm64, ...).
# Build tools (protoc, grpc_cpp_plugin, nvcc for the fatbins) are the host's; libraries and
# CMake package files come from /usr/lib/aarch64-linux-gnu. scripts/cross/aarch64.sh uses it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(PKG_CONFIG_EXECUTABLE aarch64-linux-gnu-pkg-config CACHE FILEPATH "pkg-config for arm64")

# Headers are shared between architectures on multiarch Debian; libraries are not.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# Tests run through binfmt_misc's qemu-aarch64 (registered by qemu-user-static), so children the
# tests start (caked, cake-worker) run emulated too; the emulator here covers CTest's own launch.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
