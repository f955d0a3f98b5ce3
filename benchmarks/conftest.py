"""pytest-benchmark suites, timed by the device clock (see fastgemm.harness).

    pytest benchmarks/ --benchmark-only                      # each suite's default sizes
    pytest benchmarks/ --benchmark-only --fastgemm-sizes 512,1024 --benchmark-save=mine
    pytest benchmarks/ --benchmark-only --benchmark-compare --benchmark-compare-fail=median:10%

Every suite takes its sizes from --fastgemm-sizes and its timed rounds from
--fastgemm-rounds. metal-emu rows are run (they check the shaders) but are left out of
the saved JSON and out of any comparison: emulator times are not performance numbers,
so they can never count as a regression.
"""

import pytest

import fastgemm

# Each suite's sizes when --fastgemm-sizes is not given.
LADDER_SIZES = (256, 512)
PACKED_SIZES = (128, 256, 512, 1024, 2048, 4096)
EMU_MAX = 64  # the emulator checks shaders; it is no performance source
NOT_TIMINGS = ("metal-emu",)  # backends whose times are not performance numbers


def pytest_addoption(parser):
    group = parser.getgroup("fastgemm", "fastgemm benchmark suites")
    group.addoption("--fastgemm-sizes", default=None, metavar="N,N,...",
                    help="comma-separated square sizes for every suite (default: "
                         f"{','.join(map(str, LADDER_SIZES))} for bench_ladder.py, "
                         f"{','.join(map(str, PACKED_SIZES))} for bench_cpu_packed.py, whose skinny shapes "
                         "use the largest size)")
    group.addoption("--fastgemm-rounds", type=int, default=5, metavar="N",
                    help="timed rounds of every benchmark (default: %(default)s)")


def sizes(config, default):
    """The sizes of this run: --fastgemm-sizes, else the suite's default."""
    text = config.getoption("--fastgemm-sizes")
    if text is None:
        return list(default)
    try:
        out = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise pytest.UsageError(f"--fastgemm-sizes takes whole numbers such as 256,512, got {text!r}") from None
    if not out or any(n < 1 for n in out):
        raise pytest.UsageError(f"--fastgemm-sizes takes sizes >= 1, got {text!r}")
    return out


def skinny_shapes(n):
    """Tall-skinny, short-wide and K-light shapes around size n (64 on the thin side)."""
    return [(n, 64, n), (64, n, n), (n, n, 64)] if n > 64 else []


def pytest_generate_tests(metafunc):
    if "ladder_n" in metafunc.fixturenames:
        metafunc.parametrize("backend,kernel,ladder_n", ladder_cases(sizes(metafunc.config, LADDER_SIZES)))
    elif "packed_shape" in metafunc.fixturenames:
        ns = sizes(metafunc.config, PACKED_SIZES)
        shapes = [(n, n, n) for n in ns] + skinny_shapes(max(ns))
        metafunc.parametrize("packed_shape", shapes, ids=["x".join(map(str, s)) for s in shapes])
    elif "size" in metafunc.fixturenames:
        metafunc.parametrize("size", sizes(metafunc.config, LADDER_SIZES))


@pytest.fixture
def rounds(request):
    n = request.config.getoption("--fastgemm-rounds")
    if n < 1:
        raise pytest.UsageError(f"--fastgemm-rounds must be >= 1, got {n}")
    return n


def ladder_cases(sizes):
    """(backend, kernel, n) for every kernel of every available backend at each size n it
    runs (metal-emu at most EMU_MAX). Kernels whose constraints exclude n^3, or whose
    FLOP cap it exceeds (teaching loops too slow to time there; `fastgemm bench --all`
    runs them), get no case at that size: nothing is generated only to be skipped."""
    cases = []
    for b in fastgemm.backends():
        if not b.available:
            continue
        for k in fastgemm.kernels(b.name):
            ns = sorted({min(n, EMU_MAX) if b.name in NOT_TIMINGS else n for n in sizes})
            for n in ns:
                if 2.0 * n ** 3 <= k.bench_flops_cap and k.accepts(n, n, n):
                    cases.append(pytest.param(b.name, k.name, n, id=f"{b.name}-{k.name}-{n}"))
    return cases


def is_timing(bench: dict) -> bool:
    """False for a saved benchmark whose times are not performance numbers (metal-emu)."""
    backend = (bench.get("extra_info") or {}).get("backend")
    if backend is not None:
        return backend not in NOT_TIMINGS
    return not any(name in (bench.get("group") or "") or name in (bench.get("name") or "")
                   for name in NOT_TIMINGS)


def pytest_benchmark_update_json(config, benchmarks, output_json):
    """Saved files (--benchmark-save, --benchmark-autosave, --benchmark-json) hold timings only."""
    output_json["benchmarks"] = [b for b in output_json["benchmarks"] if is_timing(b)]


def pytest_benchmark_compare_machine_info(config, benchmarksession, machine_info, compared_benchmark):
    """Files saved before the filter above: their emulator rows are not compared either."""
    compared_benchmark["benchmarks"] = [b for b in compared_benchmark["benchmarks"] if is_timing(b)]
