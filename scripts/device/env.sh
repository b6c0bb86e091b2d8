# Sourced by the device scripts: run binaries built elsewhere (build/device from
# scripts/device_bundle.sh) with the carried cuobjdump (.toolchain) and the device's nvcc.
out=${OUT:-evidence-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build/device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CAKE_CUOBJDUMP="$PWD/.toolchain/bin/cuobjdump"
export CAKE_NVCC=${CAKE_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
