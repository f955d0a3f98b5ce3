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
    if "size" in metafunc.fixturenames:
        sizes = [int(s) for s in metafunc.config.getoption("--fastgemm-sizes").split(",") if s.strip()]
        metafunc.parametrize("size", sizes)


@pytest.fixture
def rounds(request):
    return request.config.getoption("--fastgemm-rounds")


def ladder_cases(backends=None, *, emu_max_size=64):
    """(backend, kernel) pairs for every available backend (metal-emu only at tiny sizes)."""
    cases = []
    for b in fastgemm.backends():
        if not b.available or (backends and b.name not in backends):
            continue
        for k in fastgemm.kernels(b.name):
            cases.append(pytest.param(b.name, k.name, id=f"{b.name}-{k.name}"))
    return cases
