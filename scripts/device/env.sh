# Sourced by the device scripts: run binaries built elsewhere (build/device from
# scripts/device_bundle.sh) with the carried cuobjdump (.toolchain) and the device's nvcc.
out=${OUT:-evidence-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build/device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CAKE_CUOBJDUMP="$PWD/.toolchain/bin/cuobjdump"
export CAKE_NVCC=${CAKE_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
# The head of every environment.txt: date, commit, host, GPU and nvcc.
describe_device() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: ${CAKE_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "host: $(uname -srm)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  "$CAKE_NVCC" --version | tail -2
}
