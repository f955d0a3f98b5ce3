"""A shape class's first tournament disturbed on purpose, and what its second opinion does.

    python benchmarks/second_opinion.py [--size 1024] [--threads 2] [--start 0.06] [--length 0.5]

A thread of this process busy-waits on one core for --length seconds, starting --start
seconds into the first fastgemm.sgemm call of an n x n x n class (kernel="auto", host
arrays), the way a hypervisor or another process takes a core of a small VM: with
OpenBLAS among the candidates, the tournament times it first, sleeps while its threads
spin, and then times fastgemm's own kernels, which the busy thread then slows. The
script prints that tournament's times and winner, calls the class until its second
opinion is due, and prints the second tournament's times and winner, the due call's time
and the median call before and after it (docs/cpu-notes.md, "A disturbed tournament").
It uses a tuning cache of its own, so every run starts from a first tournament.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time


def busy(start: float, length: float) -> None:
    time.sleep(start)
    end = time.perf_counter() + length
    while time.perf_counter() < end:
        pass


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024, help="n of the n x n x n class (default 1024)")
    ap.add_argument("--threads", type=int, default=2, help="fastgemm's and OpenBLAS's threads (default 2)")
    ap.add_argument("--start", type=float, default=0.06, help="seconds into the first call (default 0.06)")
    ap.add_argument("--length", type=float, default=0.5, help="seconds the busy thread runs (default 0.5)")
    args = ap.parse_args(argv)
    if args.size < 1 or args.threads < 1 or args.start < 0 or args.length < 0:
        ap.error("--size and --threads must be positive, --start and --length not negative")
    os.environ["FASTGEMM_CACHE_DIR"] = tempfile.mkdtemp(prefix="fastgemm-second-opinion-")
    import numpy as np
    import fastgemm

    fastgemm.set_num_threads(args.threads)
    n = args.size
    rng = np.random.default_rng(7)
    A, B = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    C = np.empty((n, n), np.float32)
    gflops = lambda s: 2.0 * n ** 3 / s * 1e-9

    def show(what, record):
        times = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in sorted(record["seconds"].items()))
        print(f"{what}: winner {record['winner']}; {times}")

    hog = threading.Thread(target=busy, args=(args.start, args.length))
    hog.start()
    t0 = time.perf_counter()
    fastgemm.sgemm(A, B, C)
    first_call = time.perf_counter() - t0
    hog.join()
    first = fastgemm.autotune.records()[-1]
    show(f"first tournament ({first_call * 1e3:.0f} ms{', disturbed' if args.length > 0 else ''})", first)
    pending = fastgemm._fastgemm.provisional_choices().get(first["shape_class"])
    if pending is None:
        print("the class is not provisional (autotune off, or one candidate): nothing to show")
        return 1
    left = pending.calls_left
    print(f"calls before the second opinion: {left}")
    times = []
    for _ in range(left + 50):
        t0 = time.perf_counter()
        fastgemm.sgemm(A, B, C)
        times.append(time.perf_counter() - t0)
    second = fastgemm.autotune.records()[-1]
    if not second["second_opinion"]:
        print("no second opinion was recorded")
        return 1
    show("second tournament", second)
    before, after = statistics.median(times[:left - 1] or times[:1]), statistics.median(times[left:])
    print(f"a call before: {before * 1e3:.2f} ms ({gflops(before):.0f} GFLOP/s); the due call: "
          f"{times[left - 1] * 1e3:.0f} ms; a call after: {after * 1e3:.2f} ms ({gflops(after):.0f} GFLOP/s), "
          f"{before / after:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
