"""Keeps kernel="auto"'s measurements across processes.

The native core times the candidate kernels the first time it meets a shape class and
remembers the winner (src/core/autotune.hpp). This module saves that table to a JSON
file per fastgemm version and CPU, and loads it at import, so the timing is paid once
per machine. FASTGEMM_CACHE_DIR moves the file; FASTGEMM_AUTOTUNE=0 disables timing.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
from pathlib import Path

from . import _fastgemm


def cache_file() -> Path:
    base = os.environ.get("FASTGEMM_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "fastgemm")
    info = _fastgemm.build_info
    machine = hashlib.sha1(f"{info['cpu_model']}|{info['cpu_isa']}|{_fastgemm.available_cores()}".encode())
    return Path(base) / f"autotune-{info['version']}-{machine.hexdigest()[:12]}.json"


def load() -> None:
    try:
        table = json.loads(cache_file().read_text())
        if isinstance(table, dict):
            _fastgemm.load_tuning_table({str(k): str(v) for k, v in table.items()})
    except (OSError, ValueError):
        pass  # no cache yet, or unreadable: measure again


def save() -> None:
    table = _fastgemm.tuning_table()
    if not table:
        return
    path = cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home must not break the user's program


def table() -> dict:
    """shape class -> kernel chosen by kernel="auto" in this process (and loaded ones)."""
    return dict(_fastgemm.tuning_table())


atexit.register(save)
