#!/usr/bin/env bash
# Builds fastgemm with AddressSanitizer + UndefinedBehaviorSanitizer (the top-level
# CMake option FASTGEMM_SANITIZE=ON) into its own directory, without touching the normal
# install, and runs the correctness tests against that build: the cpu tests, the metal-emu
# tests when the emulator exists in this tree, and the reliability/property tests. The
# benchmarks are not run (sanitized timings mean nothing).
#
#   scripts/sanitize.sh                 # build + test (CI stage, about 5 min on 2 cores)
#   scripts/sanitize.sh -- -k sgemm     # extra arguments after -- go to pytest
#
# Environment: FASTGEMM_SANITIZE_DIR (default build/sanitize) holds the CMake build and
# the installed package (a pip --target directory put first on PYTHONPATH);
# SANITIZE_SKIP_BUILD=1 re-runs the tests on the last build.
# CPython is not built with ASan, so libasan is preloaded and leak checking is off
# (the interpreter's own allocations look like leaks at exit).
set -euo pipefail
cd "$(dirname "$0")/.."

pytest_args=()
if [[ "${1:-}" == "--" ]]; then
  shift
  pytest_args=("$@")
fi

PY=${PYTHON:-python3}
root=${FASTGEMM_SANITIZE_DIR:-build/sanitize}
mkdir -p "$root"
root=$(cd "$root" && pwd)  # absolute from here on: relative and absolute settings both work
target="$root/site"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

compiler=${CXX:-g++}
libasan=$("$compiler" -print-file-name=libasan.so)
if [[ "$libasan" != /* || ! -e "$libasan" ]]; then
  echo "sanitize.sh: cannot find libasan.so for $compiler (install the compiler's ASan runtime)" >&2
  exit 2
fi
# libstdc++ must be loaded when ASan starts, or its __cxa_throw interceptor finds no real
# __cxa_throw (python itself does not link libstdc++) and the first C++ throw aborts with
# "CHECK failed: asan_interceptors.cpp ... real___cxa_throw".
libstdcxx=$("$compiler" -print-file-name=libstdc++.so.6)

# Reuse the build requirements already installed when they are (no network needed),
# else let pip build in an isolated environment.
isolation=()
if "$PY" -c "import scikit_build_core, pybind11" 2>/dev/null; then
  isolation=(--no-build-isolation)
fi

# -O1 with line tables (-g1): what ASan's documentation recommends, and a third of the
# build time of -O2 -g, with the tests no slower (docs/reliability.md).
defines=(-C cmake.define.FASTGEMM_SANITIZE=ON -C cmake.define.FASTGEMM_CUDA=OFF
         -C cmake.build-type=RelWithDebInfo -C "cmake.define.CMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
         -C "build-dir=$root/cmake")
# metal-emu is part of the stage whenever its sources exist in this tree.
if [[ -f src/emu/CMakeLists.txt ]]; then
  defines+=(-C cmake.define.FASTGEMM_EMU=ON)
fi

if [[ -z "${SANITIZE_SKIP_BUILD:-}" ]]; then  # SANITIZE_SKIP_BUILD=1: re-test the last build
  echo "== sanitize: building with ASan+UBSan into $target"
  rm -rf "$target"
  "$PY" -m pip install -q --no-deps "${isolation[@]}" --target "$target" "${defines[@]}" .
fi

tests=(tests/test_sgemm_cpu.py tests/test_cpu_packed.py tests/test_errors.py tests/test_api.py
       tests/test_properties.py tests/test_reliability.py)
for extra in tests/test_metal_emu.py tests/test_emu_run.py; do
  [[ -f "$extra" ]] && tests+=("$extra")
done
present=()
for t in "${tests[@]}"; do [[ -f "$t" ]] && present+=("$t"); done

export PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}"
export LD_PRELOAD="$libasan:$libstdcxx${LD_PRELOAD:+:$LD_PRELOAD}"
# allocator_may_return_null: an absurd allocation must become MemoryError, as without ASan.
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export FASTGEMM_SANITIZED=1                     # tests skip RSS-growth checks (ASan quarantine)
export FASTGEMM_CACHE_DIR="$root/cache"         # autotune table of this build only
export FASTGEMM_HYPOTHESIS_PROFILE=${FASTGEMM_HYPOTHESIS_PROFILE:-ci}
export FASTGEMM_SANITIZE_TARGET="$target"

"$PY" - <<'EOF'
import fastgemm, os, sys
where = fastgemm.__file__
print("== sanitize: testing", where, "backends:",
      [b.name for b in fastgemm.backends() if b.available])
if not where.startswith(os.environ["FASTGEMM_SANITIZE_TARGET"] + "/"):
    sys.exit("sanitize.sh: the sanitized build is not the one imported")
EOF

# Left to the unsanitized test run: the property tests of the emulated tensor-op shaders
# and the emulator's sweep of aliased operands over every shader. They run the shaders'
# own arithmetic for minutes under ASan (7x their normal time) and reach no host or
# runtime code that test_metal_emu.py, test_emu_run.py and the emulator's other
# property cases do not; the cpu kernels keep every property case.
deselect=(-k "not (metal-emu and (tensorops_sync or aliasing))")

echo "== sanitize: pytest ${present[*]}"
"$PY" -m pytest -q -p no:cacheprovider "${deselect[@]}" "${present[@]}" "${pytest_args[@]}"
