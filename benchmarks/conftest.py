"""pytest-benchmark suites, timed by the device clock (see fastgemm.harness).

    pytest benchmarks/ --benchmark-only                      # default sizes
    pytest benchmarks/ --benchmark-only --fastgemm-sizes 512,1024 --benchmark-save=mine
    pytest benchmarks/ --benchmark-only --benchmark-compare   # against the last save
"""

import pytest

import fastgemm


def pytest_addoption(parser):
    parser.addoption("--fastgemm-sizes", default="256,512",
                     help="comma-separated square sizes for the ladder benchmarks")
    parser.addoption("--fastgemm-rounds", type=int, default=5, help="timed rounds per benchmark")


def pytest_generate_tests(metafunc):
    sizes = [int(s) for s in metafunc.config.getoption("--fastgemm-sizes").split(",") if s.strip()]
    if "ladder_n" in metafunc.fixturenames:
        metafunc.parametrize("backend,kernel,ladder_n", ladder_cases(sizes))
    elif "size" in metafunc.fixturenames:
        metafunc.parametrize("size", sizes)


@pytest.fixture
def rounds(request):
    return request.config.getoption("--fastgemm-rounds")


EMU_MAX = 64  # the emulator checks shaders; it is no performance source


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
            ns = sorted({min(n, EMU_MAX) if b.name == "metal-emu" else n for n in sizes})
            for n in ns:
                if 2.0 * n ** 3 <= k.bench_flops_cap and k.accepts(n, n, n):
                    cases.append(pytest.param(b.name, k.name, n, id=f"{b.name}-{k.name}-{n}"))
    return cases
