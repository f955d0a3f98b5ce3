#!/usr/bin/env bash
# Build, verify and time the cuda backend in one command on a machine with an NVIDIA GPU.
#
#     scripts/cuda_session.sh OUTDIR [STAGE=SECONDS ...]
#
# Stages run in the order given, each under its own time limit, and each writes
# OUTDIR/STAGE.log (the JSON of the timing stages beside it), so that a stage that
# fails or runs out of time still leaves the others' output. Stages:
#
#   build    pip install --no-build-isolation --no-deps . (the machine's own Python)
#   tests    the GPU tests: tests/test_cuda.py, test_ozaki.py, test_profile.py
#   quick    benchmarks/cuda_shapes.py --quick (a dozen shapes of every kind)
#   shapes   benchmarks/cuda_shapes.py, the whole suite
#   ladder   benchmarks/cuda_ladder.py at 4096^3 (every rung, interleaved rounds)
#   ozaki    the FP32-accurate families (fp32x3, the Ozaki rung and its forms, cuBLAS) at
#            4096-16384^3 (sizes from $OZAKI_SIZES, kernels from $OZAKI_KERNELS)
#   gemmul8  benchmarks/gemmul8_compare.py against a GEMMul8 checkout in $GEMMUL8 (and its
#            library built before, $GEMMUL8_LIB, if set: building it takes over 5 minutes)
#
# Default: build=300 tests=240 quick=240. The wheel of a missing build dependency can
# be installed first with FASTGEMM_WHEELS=dir (pip --target, added to PYTHONPATH).
set -uo pipefail
out=${1:?usage: scripts/cuda_session.sh OUTDIR [STAGE=SECONDS ...]}
shift
mkdir -p "$out"
cd "$(dirname "$0")/.."

export PYTHONUNBUFFERED=1
# The system compiler, whatever CXX the image presets: a compiler of its own without the
# shared libstdc++.so link would link the static runtime (cmake/shared_libstdcxx.cmake).
export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
py=${PYTHON:-python3}

if [[ -n "${FASTGEMM_WHEELS:-}" ]]; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/fastgemm-wheels "$FASTGEMM_WHEELS"/*.whl || exit 1
    export PYTHONPATH=/tmp/fastgemm-wheels${PYTHONPATH:+:$PYTHONPATH}
fi

stage() {
    local name=$1 limit=$2
    shift 2
    printf '\n=== %s (limit %ss, at %ss)\n' "$name" "$limit" "$SECONDS"
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$out/$name.log" | tail -n 60
    printf '=== %s: exit %s after %ss\n' "$name" "${PIPESTATUS[0]}" "$SECONDS"
}

run_stage() {
    local name=$1 limit=$2
    case "$name" in
        build)   rm -rf build/  # a configure cached with another compiler stays with it
                 stage build "$limit" "$py" -m pip install --no-build-isolation --no-deps -v . &&
                 nm -D --defined-only "$("$py" -c "import fastgemm, os; print(os.path.dirname(fastgemm.__file__))")"/lib/libfastgemm.so \
                     | grep -c "_M_insert" | sed "s/^/libstdc++ stream symbols defined in libfastgemm.so (want 0): /"
                 # Numpy arrays' CPU candidates call this BLAS: the system CBLAS where no
                 # scipy-openblas32 was found (carry its wheel with FASTGEMM_WHEELS).
                 grep -o "cpu baseline BLAS = .*" "$out/build.log" | head -n 1 ;;
        tests)   stage tests "$limit" "$py" -m pytest -q -p timeout --timeout 120 --maxfail 25 \
                     tests/test_cuda.py tests/test_ozaki.py tests/test_profile.py ;;
        quick)   stage quick "$limit" "$py" benchmarks/cuda_shapes.py --quick \
                     --max-minutes $(( limit / 60 - 1 )) --json "$out/quick.json" ;;
        shapes)  stage shapes "$limit" "$py" benchmarks/cuda_shapes.py \
                     --max-minutes $(( limit / 60 - 1 )) --json "$out/shapes.json" ;;
        ladder)  stage ladder "$limit" "$py" benchmarks/cuda_ladder.py --sizes 4096 --skip-slow \
                     --json "$out/ladder.json" ;;
        ozaki)   stage ozaki "$limit" "$py" benchmarks/cuda_ladder.py --sizes "${OZAKI_SIZES:-4096,8192,16384}" \
                     --kernels "${OZAKI_KERNELS:-cublas,cublas_tf32,fp32x3_wgmma_128x128,ozaki_int8_128x256,ozaki_int8_128x256_fused_rows,ozaki_int8_128x256_resident,async_tma_128x256}" \
                     --rounds 2 --json "$out/ozaki.json" ;;
        gemmul8) stage gemmul8 "$limit" "$py" benchmarks/gemmul8_compare.py \
                     --gemmul8 "${GEMMUL8:?set GEMMUL8 to a GEMMul8 checkout}" \
                     ${GEMMUL8_LIB:+--library "$GEMMUL8_LIB"} \
                     --sizes 4096,8192,16384 --json "$out/gemmul8.json" ;;
        *)       echo "unknown stage: $name" >&2; return 2 ;;
    esac
}

nvidia-smi -L 2>&1 | head -n 4
[[ $# -gt 0 ]] || set -- build=300 tests=240 quick=240
for spec in "$@"; do
    run_stage "${spec%%=*}" "${spec#*=}"
done
