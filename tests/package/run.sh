#!/usr/bin/env bash
# Package test: a user's program built against an installed Rill, both ways a user builds one
# (CMake's find_package(Rill) + Rill::rill, and pkg-config), from two installs of a built tree:
#   1. `cmake --install` into WORK_DIR/prefix;
#   2. the Debian package `cpack -G DEB` makes, unpacked into WORK_DIR/deb-root (as dpkg would
#      install it under /, without touching the machine).
# Each of the four programs runs on two ranks.
#   tests/package/run.sh BUILD_DIR WORK_DIR
# Everything under WORK_DIR is recreated on every run.
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 BUILD_DIR WORK_DIR" >&2
  exit 2
fi
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
build_dir=$(readlink -f "$1")
mkdir -p "$2"
work_dir=$(readlink -f "$2")
prefix=$work_dir/prefix

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  echo "$0: $build_dir is not a configured CMake build directory" >&2
  exit 2
fi

rm -rf "${work_dir:?}"/*

# Build the consumers with the compiler, build type and sanitizer of the Rill build (a sanitized
# librill.a only links into a sanitized program).
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" | head -n 1; }
config_args=(-G Ninja)
cxx=$(cache_value CMAKE_CXX_COMPILER)
if [[ -n $cxx ]]; then
  config_args+=(-DCMAKE_CXX_COMPILER="$cxx")
fi
build_type=$(cache_value CMAKE_BUILD_TYPE)
if [[ -n $build_type ]]; then
  config_args+=(-DCMAKE_BUILD_TYPE="$build_type")
fi
case $(cache_value RILL_SANITIZER) in
  address) san=-fsanitize=address,undefined ;;
  thread) san=-fsanitize=thread ;;
  *) san= ;;
esac
if [[ -n $san ]]; then
  config_args+=(-DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san")
fi

# build_with_cmake PREFIX BUILD: the consumer's CMake project against the package under PREFIX.
build_with_cmake() {
  cmake -S "$here/consumer" -B "$2" "${config_args[@]}" -DCMAKE_PREFIX_PATH="$1"
  cmake --build "$2"
  "$2/rill_consumer" --rill:ranks=2
}

# build_with_pkg_config ROOT BINARY: one compiler line with `pkg-config --cflags --libs rill`,
# finding the rill.pc installed under ROOT (the system's .pc files of Rill's dependencies stay
# visible).
build_with_pkg_config() {
  local pc flags
  pc=$(find "$1" -name rill.pc)
  if [[ -z $pc ]]; then
    echo "$0: no rill.pc under $1" >&2
    exit 1
  fi
  flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs rill)
  # shellcheck disable=SC2086 # the flags are a list of words
  "${cxx:-c++}" -std=c++20 $san "$here/consumer/main.cpp" -o "$2" $flags
  "$2" --rill:ranks=2
}

cmake --install "$build_dir" --prefix "$prefix"
build_with_cmake "$prefix" "$work_dir/cmake-consumer"
build_with_pkg_config "$prefix" "$work_dir/pkg-config-consumer"

cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work_dir/deb"
debs=("$work_dir"/deb/*.deb)
if ((${#debs[@]} != 1)) || [[ ! -f ${debs[0]} ]]; then
  echo "$0: cpack made ${#debs[@]} packages, expected one .deb" >&2
  exit 1
fi
[[ $(dpkg-deb --field "${debs[0]}" Package) == librill-dev ]]
dpkg-deb --field "${debs[0]}" Depends | grep -q libboost-context-dev
dpkg-deb --extract "${debs[0]}" "$work_dir/deb-root"
build_with_cmake "$work_dir/deb-root/usr" "$work_dir/deb-cmake-consumer"
build_with_pkg_config "$work_dir/deb-root" "$work_dir/deb-pkg-config-consumer"
echo "package test: OK"
