#!/usr/bin/env bash
# Installs the Debian 12 packages Rill needs to build, test, benchmark and fuzz.
# Idempotent and fast: asks dpkg which packages are missing and only calls apt-get (update and
# install) when something is. Installing needs root; checking does not.
set -euo pipefail

packages=(
  build-essential g++ cmake ninja-build ccache pkg-config python3
  gnuplot-nox                         # bench/run's plots (bench/results/*.png, docs/images/*.png)
  mold                                # a faster linker (RILL_USE_MOLD)
  libboost-context-dev
  libopenmpi-dev openmpi-bin          # the default MPI (highest alternatives priority on Debian)
  mpich libmpich-dev                  # kept working too; its lower priority leaves mpicxx/mpirun to OpenMPI
  libtbb-dev libcereal-dev libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev libhwloc-dev
  libhdf5-dev libsqlite3-dev          # HDF5 files and SQLite tables attached as external resources (src/data)
  libssl-dev                          # SHA-1 of the UTS benchmark (bench/uts)
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev            # the fuzz preset (libFuzzer runtime)
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: dpkg-query not found; this script supports Debian 12 (bookworm) only" >&2
  exit 1
fi

missing=()
for pkg in "${packages[@]}"; do
  # Status is "<want> <flag> <state>"; only state "installed" counts (not config-files etc.).
  status=$(dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null || true)
  if ! grep -q ' installed$' <<<"$status"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: error: installing packages needs root; run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_opts=(-y -q -o DPkg::Lock::Timeout=300)
apt-get "${apt_opts[@]}" update
apt-get "${apt_opts[@]}" install "${missing[@]}"
echo "install-deps: installed: ${missing[*]}"
