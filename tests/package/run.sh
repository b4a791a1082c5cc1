#!/usr/bin/env bash
# Package test: installs a configured+built Rill build tree into WORK_DIR/prefix, then configures,
# builds and runs tests/package/consumer against it (find_package(Rill) + Rill::rill).
#   tests/package/run.sh BUILD_DIR WORK_DIR
# WORK_DIR/prefix and WORK_DIR/consumer-build are recreated on every run.
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
consumer_build=$work_dir/consumer-build

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  echo "$0: $build_dir is not a configured CMake build directory" >&2
  exit 2
fi

rm -rf "$prefix" "$consumer_build"
cmake --install "$build_dir" --prefix "$prefix"

# Build the consumer with the compiler, build type and sanitizer of the Rill build (a sanitized
# librill.a only links into a sanitized program).
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" | head -n 1; }
config_args=(-G Ninja -DCMAKE_PREFIX_PATH="$prefix")
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

cmake -S "$here/consumer" -B "$consumer_build" "${config_args[@]}"
cmake --build "$consumer_build"
"$consumer_build/rill_consumer" --rill:ranks=2
echo "package test: OK"
