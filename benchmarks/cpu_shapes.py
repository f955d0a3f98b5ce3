"""The CPU shape suite: fastgemm.sgemm against numpy and torch, through the calls users make.

    python benchmarks/cpu_shapes.py                       # 1 thread and all threads, 3 rounds
    python benchmarks/cpu_shapes.py --quick --threads 1   # the small shapes only
    python benchmarks/cpu_shapes.py --json cpu-shapes.json --libraries fastgemm,numpy

Every library computes C = op(A) @ op(B) into a preallocated C through its own Python
call: fastgemm.sgemm(A, B, C), np.matmul(A, B, out=C), torch.matmul(A, B, out=C) (a
CPU build of torch, when installed). Transposed operands are passed as transposed views
(A.T of an array stored K x M), the way a user holding such arrays would pass them.

Each library runs in its own process (so no library's thread pool or allocator state
affects another's timings), with the thread count set the way its users set it
(FASTGEMM_NUM_THREADS, OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS,
torch.set_num_threads). A round runs every library's process once, in an order that
rotates from round to round; a library's time for a shape is the median over rounds of
the best per-call time of that round (calls repeated for about 0.2 s, three times).
fastgemm's kernel="auto" tunes each shape class in the first round, and keeps it in a
tuning cache private to the run, as it would on a user's machine; a class's second
opinion, once it has run ten times its tuning's time, can fall in a later round.

The table gives each library's GFLOP/s, fastgemm's ratio to the faster of the others
(> 1: fastgemm is faster), its relative error against a float64 reference of sampled
rows and the kernel kernel="auto" ran in each round; it ends with the geomean and the
worst shapes. --json writes the rows in the shape suite format of
benchmarks/results_table.py (one file per thread count when several).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

# (label, M, N, K, trans): op(A) is M x K, op(B) K x N; trans says which are transposed.
SHAPES = [
    ("overhead 1x1x1", 1, 1, 1, "NN"),
    ("square", 8, 8, 8, "NN"),
    ("square", 16, 16, 16, "NN"),
    ("square", 32, 32, 32, "NN"),
    ("square", 64, 64, 64, "NN"),
    ("square", 128, 128, 128, "NN"),
    ("square", 256, 256, 256, "NN"),
    ("square", 512, 512, 512, "NN"),
    ("square", 1024, 1024, 1024, "NN"),
    ("square", 2048, 2048, 2048, "NN"),
    ("square", 4096, 4096, 4096, "NN"),
    ("square A@B^T", 256, 256, 256, "NT"),
    ("square A^T@B", 256, 256, 256, "TN"),
    ("square A^T@B^T", 256, 256, 256, "TT"),
    ("square A@B^T", 1024, 1024, 1024, "NT"),
    ("gemv x@W", 1, 4096, 4096, "NN"),
    ("gemv x@W^T", 1, 4096, 4096, "NT"),
    ("gemv W@x", 4096, 1, 4096, "NN"),
    ("gemv W^T@x", 4096, 1, 4096, "TN"),
    ("skinny x@W^T", 16, 4096, 4096, "NT"),
    ("skinny x@W^T", 64, 4096, 1024, "NT"),
    ("skinny x@W^T", 128, 4096, 4096, "NT"),
    ("skinny x@W", 16, 4096, 4096, "NN"),
    ("skinny W@x", 4096, 16, 4096, "NN"),
    ("tall", 8192, 64, 64, "NN"),
    ("K-heavy", 128, 128, 8192, "NN"),
    ("K-heavy", 64, 64, 65536, "NN"),
    ("K-heavy A@B^T", 256, 256, 16384, "NT"),
    ("odd", 777, 555, 333, "NN"),
    ("primes", 127, 251, 509, "TN"),
    ("odd", 1000, 1000, 1000, "NN"),
    ("off-by-one", 1025, 1023, 1024, "NN"),
    ("odd tiny", 3, 5000, 7, "NN"),
]
QUICK_FLOPS = 2.0 * 600**3  # --quick keeps shapes up to about this much work
LIBRARIES = ("fastgemm", "numpy", "torch")
BLOCK_SECONDS = 0.2


def flops(M, N, K):
    return 2.0 * M * N * K


# --- the worker: one library, one thread count, every shape ---------------------------

def _library_call(name, threads):
    """(prepare(A, B, C, ta, tb) -> call, version) for one library."""
    import numpy as np

    if name == "fastgemm":
        import fastgemm

        fastgemm.set_num_threads(threads)

        def prepare(A, B, C, ta, tb):
            a, b = (A.T if ta else A), (B.T if tb else B)
            return lambda: fastgemm.sgemm(a, b, C)

        return prepare, fastgemm.__version__
    if name == "numpy":
        def prepare(A, B, C, ta, tb):
            a, b = (A.T if ta else A), (B.T if tb else B)
            return lambda: np.matmul(a, b, out=C)

        return prepare, np.__version__
    if name == "torch":
        import torch

        torch.set_num_threads(threads)

        def prepare(A, B, C, ta, tb):
            a, b, c = torch.from_numpy(A), torch.from_numpy(B), torch.from_numpy(C)
            a, b = (a.T if ta else a), (b.T if tb else b)
            return lambda: torch.matmul(a, b, out=c)

        return prepare, torch.__version__
    raise SystemExit(f"unknown library {name!r}")


def _best_per_call(call, budget):
    """Best of three blocks of back-to-back calls, each about `budget` seconds long."""
    t0 = time.perf_counter()
    call()
    once = max(time.perf_counter() - t0, 1e-7)
    reps = max(1, int(budget / once))
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def worker(name, threads, shapes, check):
    import numpy as np

    prepare, version = _library_call(name, threads)
    rng = np.random.default_rng(1234)
    out = {"library": name, "version": version, "threads": threads, "times": {}, "errors": {}, "picks": {}}
    for label, M, N, K, trans in shapes:
        ta, tb = trans[0] == "T", trans[1] == "T"
        A = rng.uniform(-1, 1, (K, M) if ta else (M, K)).astype(np.float32)
        B = rng.uniform(-1, 1, (N, K) if tb else (K, N)).astype(np.float32)
        C = np.empty((M, N), dtype=np.float32)
        call = prepare(A, B, C, ta, tb)
        call()  # warm-up (and fastgemm's tuning of the class, in the first round)
        key = f"{label}|{M}x{N}x{K}|{trans}"
        out["times"][key] = _best_per_call(call, BLOCK_SECONDS)
        if name == "fastgemm":  # what kernel="auto" ran for the class once the timing was over
            import fastgemm

            shape_class = fastgemm._fastgemm.shape_class("auto", M, N, K, ta, tb, 0.0, "fp32")
            out["picks"][key] = fastgemm.autotune.table().get(shape_class, "?")
        if check:
            rows = np.unique(np.linspace(0, M - 1, min(M, 64)).astype(int))
            a = (A.T if ta else A).astype(np.float64)[rows]
            b = (B.T if tb else B).astype(np.float64)
            ref = a @ b
            denom = np.linalg.norm(ref)
            err = np.linalg.norm(C[rows].astype(np.float64) - ref)
            out["errors"][key] = float(err / denom) if denom > 0 else float(err)
    return out


# --- the driver ---------------------------------------------------------------------

def _run_worker(name, threads, shapes, check, env):
    env = dict(env)
    for var in ("FASTGEMM_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--threads", str(threads),
           "--shapes", json.dumps(shapes)] + (["--check"] if check else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the {name} worker failed:\n{proc.stderr.strip()}")
    return json.loads(proc.stdout)


def available_libraries(wanted):
    found = []
    for name in wanted:
        try:
            __import__(name)
        except ImportError:
            print(f"note: {name} is not installed; its column is left out", file=sys.stderr)
            continue
        found.append(name)
    if "fastgemm" not in found:
        raise SystemExit("fastgemm is not importable: pip install . first")
    return found


def measure(libraries, threads, shapes, rounds):
    """{library: {"times": {key: median seconds}, "errors": {...}, "version": ...}}"""
    runs = {name: [] for name in libraries}
    with tempfile.TemporaryDirectory(prefix="fastgemm-shapes-") as cache:
        env = dict(os.environ, FASTGEMM_CACHE_DIR=cache)
        for r in range(rounds):
            order = libraries[r % len(libraries):] + libraries[:r % len(libraries)]
            for name in order:
                runs[name].append(_run_worker(name, threads, shapes, r == 0, env))
                print(f"  round {r + 1}/{rounds}: {name} done", file=sys.stderr)
    merged = {}
    for name, rs in runs.items():
        keys = rs[0]["times"].keys()
        merged[name] = {
            "version": rs[0]["version"],
            "times": {k: sorted(x["times"][k] for x in rs)[len(rs) // 2] for k in keys},
            "errors": rs[0]["errors"],
            "picks": {k: [x["picks"][k] for x in rs] for k in keys if k in rs[0]["picks"]},
        }
    return merged


def rows_for(merged, shapes):
    rows = []
    for label, M, N, K, trans in shapes:
        key = f"{label}|{M}x{N}x{K}|{trans}"
        libs = {}
        for name, m in merged.items():
            t = m["times"][key]
            libs[name] = {"time_s": t, "gflops": flops(M, N, K) / t * 1e-9}
            if key in m["errors"]:
                libs[name]["rel_err"] = m["errors"][key]
            if key in m["picks"]:
                libs[name]["picked"] = m["picks"][key]  # per round: a second opinion may change it
        peers = [libs[n]["time_s"] for n in libs if n != "fastgemm"]
        best_peer = min(peers) if peers else None
        for name in libs:
            libs[name]["ratio"] = best_peer / libs[name]["time_s"] if best_peer else None
        rows.append({"shape": label, "M": M, "N": N, "K": K, "trans": trans, "libraries": libs,
                     "best_peer": min((n for n in libs if n != "fastgemm"), key=lambda n: libs[n]["time_s"],
                                      default=None)})
    return rows


def print_table(rows, libraries, threads):
    print(f"\nCPU shape suite, {threads} thread(s): GFLOP/s per library; ratio = best other library's time / "
          f"fastgemm's (> 1: fastgemm faster)")
    head = f"{'shape':<16} {'M x N x K':>18} {'op':>3} " + " ".join(f"{n:>9}" for n in libraries)
    head += f" {'ratio':>7} {'vs':>6} {'rel err':>8}  auto ran (per round)"
    print(head)
    print("-" * len(head))
    for r in rows:
        libs = r["libraries"]
        cells = " ".join(f"{libs[n]['gflops']:9.2f}" for n in libraries)
        ratio = libs["fastgemm"]["ratio"]
        err = libs["fastgemm"].get("rel_err")
        picked = libs["fastgemm"].get("picked", [])
        ran = picked[0] if len(set(picked)) == 1 else " > ".join(picked)
        print(f"{r['shape']:<16} {r['M']:>5} x{r['N']:>5} x{r['K']:>5} {r['trans']:>3} {cells} "
              f"{ratio if ratio else float('nan'):7.2f} {r['best_peer'] or '-':>6} "
              f"{err if err is not None else float('nan'):8.1e}  {ran}")
    ratios = [(r["libraries"]["fastgemm"]["ratio"], r) for r in rows if r["libraries"]["fastgemm"]["ratio"]]
    if ratios:
        geo = math.exp(sum(math.log(x) for x, _ in ratios) / len(ratios))
        worst = sorted(ratios, key=lambda t: t[0])[:3]
        print(f"\ngeomean ratio {geo:.3f} over {len(ratios)} shapes; worst: " +
              ", ".join(f"{x:.2f} ({r['shape']} {r['M']}x{r['N']}x{r['K']} {r['trans']})" for x, r in worst))
        call = next((r for r in rows if r["shape"].startswith("overhead")), None)
        if call and call["best_peer"]:
            f_us = call["libraries"]["fastgemm"]["time_s"] * 1e6
            p_us = call["libraries"][call["best_peer"]]["time_s"] * 1e6
            print(f"per-call overhead (1x1x1): fastgemm {f_us:.2f} us, {call['best_peer']} {p_us:.2f} us "
                  f"({f_us / p_us:.2f}x)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default=None,
                    help="comma-separated thread counts (default: 1 and every usable core)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per library (default 3)")
    ap.add_argument("--libraries", default=",".join(LIBRARIES),
                    help="comma-separated: fastgemm, numpy, torch (default: those installed)")
    ap.add_argument("--quick", action="store_true", help=f"only shapes up to {QUICK_FLOPS:.1e} FLOPs")
    ap.add_argument("--json", metavar="PATH", help="write the rows (shape suite format); with several thread "
                    "counts, PATH gets -t<threads> before its extension")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--shapes", help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        shapes = [tuple(s) for s in json.loads(args.shapes)]
        print(json.dumps(worker(args.worker, int(args.threads), shapes, args.check)))
        return 0

    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        thread_counts = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, cores})
    except ValueError:
        ap.error(f"--threads must be comma-separated integers, got {args.threads!r}")
    if any(t < 1 for t in thread_counts):
        ap.error("--threads must be at least 1")
    if args.json:
        folder = os.path.dirname(os.path.abspath(args.json))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            ap.error(f"--json: cannot write into {folder}")
    shapes = [s for s in SHAPES if not args.quick or flops(*s[1:4]) <= QUICK_FLOPS]
    libraries = available_libraries([n.strip() for n in args.libraries.split(",") if n.strip()])

    import fastgemm

    for threads in thread_counts:
        print(f"measuring {len(shapes)} shapes with {threads} thread(s): {', '.join(libraries)}", file=sys.stderr)
        merged = measure(libraries, threads, shapes, args.rounds)
        rows = rows_for(merged, shapes)
        print_table(rows, libraries, threads)
        if args.json:
            path = args.json
            if len(thread_counts) > 1:
                stem, ext = os.path.splitext(args.json)
                path = f"{stem}-t{threads}{ext or '.json'}"
            doc = {
                "suite": f"cpu shapes, {threads} thread(s)",
                "backend": "cpu",
                "baseline": "best of " + ", ".join(n for n in libraries if n != "fastgemm"),
                "threads": threads,
                "rounds": args.rounds,
                "machine": {"cpu": fastgemm._fastgemm.build_info["cpu_model"],
                            "isa": fastgemm._fastgemm.build_info["cpu_isa"],
                            "cores": cores, "python": platform.python_version()},
                "versions": {n: m["version"] for n, m in merged.items()},
                "rows": rows,
            }
            with open(path, "w") as f:
                json.dump(doc, f, indent=1)
            print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
