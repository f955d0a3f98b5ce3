"""Keeps kernel="auto"'s measurements across processes.

The native core times the candidate kernels the first time it meets a shape class and
remembers the winner (src/core/selection.hpp). This module saves that table to a JSON
file per fastgemm version and machine, and loads it at import, so the timing is paid
once per machine. FASTGEMM_CACHE_DIR moves the file; FASTGEMM_AUTOTUNE=0 (or off,
false, no) disables timing.

A choice made by one tournament is provisional until the class's calls have run ten
times that tournament's time and a second tournament has confirmed or replaced it
(src/core/selection.hpp); the file keeps such choices under the key "unconfirmed" (class
-> calls left and the first tournament's rates), so that the count goes on in the next
process instead of a single noisy tournament deciding for good.

The file is untrusted input: anything could have written it. Loading never fails and
never hangs because of it: only a regular file of at most MAX_BYTES is read (a FIFO,
a device or a directory in its place is refused without opening it for reading, so
nothing blocks), malformed JSON or a non-object is discarded, and the core validates
every entry against the registry (a known shape class, an auto candidate of that
backend, of a precision class the class's accuracy allows, that accepts the class's
dimensions), so a cache can never make "auto" run a kernel it would not choose itself.
Whatever is discarded is reported in one RuntimeWarning.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import stat
import warnings
from pathlib import Path

from . import _fastgemm

MAX_BYTES = 1 << 20  # a real table is a few KiB
UNCONFIRMED = "unconfirmed"  # the key of the provisional choices (never a shape class)


def cache_file() -> Path:
    base = os.environ.get("FASTGEMM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "fastgemm")
    info = _fastgemm.build_info
    machine = hashlib.sha1(f"{info['cpu_model']}|{info['cpu_isa']}|{_fastgemm.available_cores()}".encode())
    return Path(base) / f"autotune-{info['version']}-{machine.hexdigest()[:12]}.json"


def _read_untrusted(path: Path) -> str:
    """The file's text, or raises ValueError saying why it was not read."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ""
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file")
    if st.st_size > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES} bytes")
    # O_NONBLOCK: if the path was swapped for a FIFO after the stat, open() returns at
    # once instead of waiting for a writer; fstat then refuses it.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ValueError("not a regular file")
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES} bytes")
    return data.decode("utf-8")


def load() -> int:
    """Loads the saved table; returns the number of entries (or files) discarded."""
    path = cache_file()
    try:
        text = _read_untrusted(path)
        if not text:
            return 0
        table = json.loads(text)
        if not isinstance(table, dict):
            raise ValueError(f"a JSON {type(table).__name__}, not an object")
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        warnings.warn(f"fastgemm: ignored the tuning cache {path}: {e}; kernel=\"auto\" measures again",
                      RuntimeWarning, stacklevel=2)
        return 1
    def text(x):  # a str the core can take: JSON allows lone surrogates, UTF-8 does not
        if not isinstance(x, str):
            return False
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    unconfirmed = table.pop(UNCONFIRMED, {})
    provisional, malformed = _provisional(unconfirmed, text)
    entries = {k: v for k, v in table.items() if text(k) and text(v)}
    # A class whose provisional record is malformed is tuned again rather than trusted.
    for k in malformed:
        entries.pop(k, None)
    # A record goes with its class's entry; one whose entry the file lacks altogether is
    # counted on its own (one whose entry was discarded is counted with it).
    orphans = sum(1 for k in list(provisional) + malformed if k not in table)
    provisional = {k: p for k, p in provisional.items() if k in entries}
    discarded = len(table) - len(entries) + orphans + _fastgemm.load_tuning_table(entries, provisional)
    if not isinstance(unconfirmed, dict):
        discarded += 1  # the section itself; the classes it should have listed load as confirmed
    if discarded:
        warnings.warn(f"fastgemm: ignored {discarded} invalid entr{'y' if discarded == 1 else 'ies'} of the "
                      f"tuning cache {path}; kernel=\"auto\" measures those shapes again",
                      RuntimeWarning, stacklevel=2)
    return discarded


def _provisional(unconfirmed, text):
    """(class -> ProvisionalChoice, classes whose record is malformed) from the file's
    "unconfirmed" object: {class: {"calls_left": int >= 1, "rates": {kernel: FLOP/s}}}."""
    if not isinstance(unconfirmed, dict):
        return {}, []
    good, bad = {}, []
    for k, v in unconfirmed.items():
        if not text(k):  # no class can be named so: the record is malformed
            bad.append(k)
            continue
        try:
            calls, rates = v["calls_left"], v["rates"]
            if (type(calls) is not int or not 1 <= calls < 2 ** 62 or not isinstance(rates, dict)
                    or not all(text(n) and type(r) in (int, float) for n, r in rates.items())):
                raise ValueError
            good[k] = _fastgemm.ProvisionalChoice(calls, {n: float(r) for n, r in rates.items()})
        except (TypeError, KeyError, ValueError, OverflowError):
            bad.append(k)
    return good, bad


def save() -> None:
    table = dict(_fastgemm.tuning_table())
    if not table:
        return
    table[UNCONFIRMED] = {k: {"calls_left": p.calls_left, "rates": dict(p.rates)}
                          for k, p in _fastgemm.provisional_choices().items()}
    path = cache_file()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        # A read-only home, or a directory in the file's place, must not break the
        # user's program, nor leave a file behind at each exit.
        try:
            tmp.unlink()
        except OSError:
            pass


def table() -> dict:
    """shape class -> kernel chosen by kernel="auto" in this process (and loaded ones)."""
    return dict(_fastgemm.tuning_table())


def rejections() -> list:
    """Why candidates were refused while tuning in this process (wrong result, error)."""
    return list(_fastgemm.tuning_rejections())


def records() -> list:
    """The tunings of this process, most recent last (at most 64): for each, the shape
    class, the kernel chosen ("backend/name") and every candidate's best time in seconds
    as the tournament measured it, and whether it was the class's second opinion (which
    counts each candidate at the better of its two tournaments). A refused candidate is
    missing (see rejections()); the winner is not always the fastest, since the first
    candidate and the vendor baselines keep a class unless another beats them by more
    than 3%."""
    return [dict(r) for r in _fastgemm.tuning_records()]


atexit.register(save)
