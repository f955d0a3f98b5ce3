#!/usr/bin/env bash
# Type-checks the Objective-C++ Metal host (src/metal/*.mm) on any machine with clang, against
# a copy of Apple's macOS SDK headers (no Mac needed). It parses and type-checks only: nothing
# is linked or run. docs/apple-silicon.md ("How the host is type-checked without a Mac")
# explains the recipe.
#
#   FASTGEMM_MACOS_SDK=/path/to/zig-build-macos-sdk scripts/check_objc.sh
#
# FASTGEMM_MACOS_SDK is a directory with include/ and Frameworks/ (the layout of the public
# mitchellh/zig-build-macos-sdk repository: Foundation and Metal, macOS 14). Without it the
# script says so and exits 0. That SDK has no MetalPerformanceShaders headers, so the MPS code
# is compiled out with -DFASTGEMM_SYNTAX_CHECK_NO_MPS (see src/metal/mps_baseline.mm); with
# FASTGEMM_MPS_HEADERS (a folder of Apple's MetalPerformanceShaders headers) the MPS code is
# then checked at the declaration level by scripts/check_mps_calls.py: every MPS identifier and
# every selector it sends must be declared by those headers or by the SDK's Foundation/Metal.
# CLANGXX and LIBCXX_INCLUDE override the compiler and the libc++ header directory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${FASTGEMM_MACOS_SDK:-}" ]]; then
  echo "check_objc: FASTGEMM_MACOS_SDK is not set; skipping the Objective-C++ type check"
  exit 0
fi
sdk="$(cd "$FASTGEMM_MACOS_SDK" && pwd)"
for d in include Frameworks/Foundation.framework Frameworks/Metal.framework; do
  if [[ ! -d "$sdk/$d" ]]; then
    echo "check_objc: $sdk has no $d; FASTGEMM_MACOS_SDK must point at an SDK with include/ and Frameworks/" >&2
    exit 2
  fi
done

clangxx="${CLANGXX:-}"
if [[ -z "$clangxx" ]]; then
  for c in clang++-16 clang++-17 clang++-18 clang++-19 clang++; do
    if command -v "$c" >/dev/null 2>&1; then clangxx="$c"; break; fi
  done
fi
if [[ -z "$clangxx" ]]; then
  echo "check_objc: no clang++ found (apt-get install clang-16 libc++-16-dev)" >&2
  exit 2
fi
libcxx="${LIBCXX_INCLUDE:-}"
if [[ -z "$libcxx" ]]; then
  ver="$("$clangxx" -dumpversion | cut -d. -f1)"
  libcxx="/usr/lib/llvm-$ver/include/c++/v1"
fi
if [[ ! -d "$libcxx" ]]; then
  echo "check_objc: libc++ headers not found at $libcxx (apt-get install libc++-<version>-dev)" >&2
  exit 2
fi

# clang wants a sysroot with usr/include and System/Library/Frameworks: two links make one.
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr" "$root/System/Library"
ln -s "$sdk/include" "$root/usr/include"
ln -s "$sdk/Frameworks" "$root/System/Library/Frameworks"

shopt -s nullglob
files=("$here"/src/metal/*.mm)
if [[ ${#files[@]} -eq 0 ]]; then
  echo "check_objc: no src/metal/*.mm files"
  exit 0
fi
status=0
for f in "${files[@]}"; do
  if "$clangxx" -x objective-c++ -std=c++17 -fobjc-arc \
      -target arm64-apple-macos14 -isysroot "$root" \
      -nostdinc++ -cxx-isystem "$libcxx" \
      -Wall -Wextra -Wno-unused-parameter \
      -DFASTGEMM_WITH_METAL=1 -DFASTGEMM_SYNTAX_CHECK_NO_MPS=1 \
      -I "$here/src" -fsyntax-only "$f"; then
    echo "check_objc: ok   ${f#$here/}"
  else
    echo "check_objc: FAIL ${f#$here/}"
    status=1
  fi
done
if [[ -n "${FASTGEMM_MPS_HEADERS:-}" ]]; then
  python3 "$here/scripts/check_mps_calls.py" || status=1
fi
exit $status
