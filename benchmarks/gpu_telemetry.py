"""SM clock and board power of an NVIDIA GPU while kernels are timed, from nvidia-smi.

A GPU at its power limit lowers its SM clock, and how far depends on what it runs: on
the H200 this project measures, FFMA kernels hold 1980 MHz at ~650-690 W while TF32
tensor-core kernels settle at ~1400-1600 MHz against the 700 W limit. A time taken
without the clock it ran at cannot be told apart from a slower kernel, so the ladder
prints both.

One `nvidia-smi --query-gpu ... -lms N` process samples for the whole run; window()
averages the samples taken in a span of wall-clock time. The samples carry nvidia-smi's
own timestamps (local time, millisecond resolution), so pipe buffering does not shift
them. Power is `power.draw.instant` where the driver has it: plain `power.draw` is an
average over the last second on current drivers, which after a short timed span mostly
reports what ran before it.
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
import threading
import time
from typing import List, Optional, Tuple

Sample = Tuple[float, float, float]  # (unix time, SM MHz, board W)


POWER_FIELDS = ("power.draw.instant", "power.draw")  # preferred first


def parse_sample(line: str) -> Optional[Sample]:
    """One line of `--query-gpu=timestamp,clocks.sm,<power field> --format=csv,noheader,nounits`."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 3:
        return None
    try:
        stamp = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        return stamp, float(parts[1]), float(parts[2])
    except ValueError:  # "[N/A]" fields, a header, a message
        return None


def mean_window(samples: List[Sample], t0: float, t1: float) -> Optional[Tuple[float, float, int]]:
    """Mean SM MHz and W of the samples in [t0, t1], and how many there were."""
    inside = [(mhz, w) for t, mhz, w in samples if t0 <= t <= t1]
    if not inside:
        return None
    return (sum(m for m, _ in inside) / len(inside), sum(w for _, w in inside) / len(inside), len(inside))


def nvidia_smi_index(pci_bus_id: str, listing: str) -> str:
    """The nvidia-smi index of the GPU that CUDA calls `pci_bus_id` (e.g. "0000:19:00.0"),
    from `--query-gpu=pci.bus_id,index --format=csv,noheader` output (nvidia-smi writes
    an 8-digit domain, and CUDA_VISIBLE_DEVICES may renumber CUDA's devices); "0" when
    nothing matches."""
    want = pci_bus_id.strip().lower().split(":", 1)[-1]  # bus:device.function
    for line in listing.splitlines():
        parts = [p.strip().lower() for p in line.split(",")]
        if len(parts) == 2 and want and parts[0].endswith(want):
            return parts[1]
    return "0"


class ClockSampler:
    """Samples every `period_ms` from start() to stop(); inert where nvidia-smi is absent."""

    def __init__(self, pci_bus_id: str = "", period_ms: int = 50):
        self.pci_bus_id = pci_bus_id  # CUDA's name for the GPU being timed
        self.period_ms = period_ms
        self.samples: List[Sample] = []
        self.why_not = ""
        self.power_field = ""
        self._proc: Optional[subprocess.Popen] = None
        self._reader: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def start(self) -> "ClockSampler":
        exe = shutil.which("nvidia-smi")
        if exe is None:
            self.why_not = "nvidia-smi not found"
            return self
        try:
            listing = subprocess.run([exe, "--query-gpu=pci.bus_id,index", "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError) as e:
            self.why_not = f"nvidia-smi failed: {e}"
            return self
        gpu = nvidia_smi_index(self.pci_bus_id, listing)
        self.power_field = self._first_supported(exe, gpu)
        cmd = [exe, f"--query-gpu=timestamp,clocks.sm,{self.power_field}", "--format=csv,noheader,nounits",
               f"-lms={self.period_ms}", f"--id={gpu}"]
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as e:
            self.why_not = f"nvidia-smi did not start: {e}"
            return self
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        time.sleep(0.5)  # nvidia-smi's start-up; the first kernels are baselines warming anyway
        return self

    @staticmethod
    def _first_supported(exe: str, gpu: str) -> str:
        """The first of POWER_FIELDS this driver answers with a number (older ones reject
        power.draw.instant as an invalid field)."""
        for field in POWER_FIELDS:
            try:
                out = subprocess.run([exe, f"--query-gpu=timestamp,clocks.sm,{field}", "--format=csv,noheader,nounits",
                                      f"--id={gpu}"], capture_output=True, text=True, timeout=20)
            except (OSError, subprocess.SubprocessError):
                continue
            if out.returncode == 0 and parse_sample(out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""):
                return field
        return POWER_FIELDS[-1]

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            s = parse_sample(line)
            if s is not None:
                with self._lock:
                    self.samples.append(s)

    def window(self, t0: float, t1: float) -> Optional[Tuple[float, float, int]]:
        with self._lock:
            return mean_window(self.samples, t0, t1)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._reader is not None:
            self._reader.join(timeout=5)
