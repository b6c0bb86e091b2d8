#!/usr/bin/env bash
# Installs, idempotently, what building and testing Consumer CAKE needs on a Debian 12 machine:
# Debian's -dev packages, and NVIDIA's pinned cuobjdump/nvdisasm wheels into .toolchain/ when the
# CUDA toolkit on the machine lacks them. Prints one line per missing piece it cannot install.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

debian_packages=(
  build-essential cmake ninja-build pkg-config git python3 python3-pip
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libabsl-dev libspdlog-dev libfmt-dev libsqlite3-dev sqlite3 libssl-dev
  libgtest-dev libgmock-dev libcli11-dev libsystemd-dev systemd nlohmann-json3-dev
  libseccomp-dev
)
missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The CUDA toolkit is found by CMake's CUDAToolkit; nvcc must exist.
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "bootstrap: nvcc not found: install the CUDA 13.0 toolkit (/usr/local/cuda) or put nvcc on PATH" >&2
  exit 1
fi

# cuobjdump / nvdisasm: NVIDIA's pinned PyPI wheels into a project-local folder, never system-wide.
cuda_bin=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")
toolchain="$root/.toolchain"
wheel_version=13.2.51
if [ ! -x "$cuda_bin/cuobjdump" ] && [ ! -x "$toolchain/bin/cuobjdump" ]; then
  echo "bootstrap: installing nvidia-cuda-cuobjdump/nvdisasm==$wheel_version into .toolchain/" >&2
  # --target keeps it project-local; Debian marks its python "externally managed", which only
  # guards system-wide installs.
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check --target "$toolchain/py" \
    "nvidia-cuda-cuobjdump==$wheel_version" "nvidia-cuda-nvdisasm==$wheel_version" >&2
  mkdir -p "$toolchain/bin"
  for tool in cuobjdump nvdisasm; do
    found=$(find "$toolchain/py" -type f -name "$tool" | head -n 1)
    [ -n "$found" ] || { echo "bootstrap: wheel did not contain $tool" >&2; exit 1; }
    chmod +x "$found"
    # Relative link: the tree may be copied elsewhere (a device machine, a CI clone).
    ln -sf "../${found#"$toolchain/"}" "$toolchain/bin/$tool"
  done
fi
echo "bootstrap: ok" >&2
