"""Process memory from ``/proc`` (Linux, no ROS imports): trees, RSS, high-water marks, slopes, documented bounds.

Also the machine's side of a run: CPU model, cores, RAM, and the busy / idle / stolen shares of its CPUs
(``MachineCpu``, used by ``simdist demo`` and ``simdist bench graph``).

Used by ``simdist bench soak`` (:mod:`simdist_ros.soak`). Everything here is a pure function of
``/proc`` or of its arguments, so the tests run it against real child processes.

Conventions:
- A node's memory is that of its *process tree*: the process the launcher started plus every
  descendant (the finetuner's spawn worker and multiprocessing's resource tracker included).
  Descendants come from ``/proc/<pid>/task/<tid>/children`` where the kernel offers it
  (``CONFIG_PROC_CHILDREN``), else from the parent pid field of every ``/proc/<pid>/stat``.
- RSS counts shared pages (libraries, torch) once per process, so summing RSS over processes
  over-states the machine's use; PSS (``/proc/<pid>/smaps_rollup``) splits shared pages fairly and
  is the honest total. Bounds are checked on RSS (the conservative figure).
- A node documents its bound in its module docstring with a paragraph that starts with
  ``Memory bound:`` and contains a figure in MiB or GiB, e.g.
  ``Memory bound: 600 MiB RSS for the process tree (interpreter + torch + model).``
  The first MiB/GiB figure of that paragraph is the bound.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
_BOUND_PARAGRAPH = re.compile(r"^\s*Memory bound:(.*?)(?:\n\s*\n|\Z)", re.MULTILINE | re.DOTALL)
_FIGURE = re.compile(r"(\d+(?:\.\d+)?)\s*(MiB|GiB)\b")
_STATUS_KEYS = ("VmRSS", "VmHWM")


def parse_status(text: str) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` in bytes from the text of ``/proc/<pid>/status``.

    Kernel threads and zombies have no ``Vm*`` lines; their values are 0.

    Raises:
        ValueError: a ``VmRSS``/``VmHWM`` line is not ``<int> kB``.
    """
    out = dict.fromkeys(_STATUS_KEYS, 0)
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in out:
            parts = rest.split()
            if len(parts) != 2 or parts[1] != "kB" or not parts[0].isdigit():
                raise ValueError(f"/proc status line {line!r}: expected '<int> kB'")
            out[key] = int(parts[0]) * 1024
    return out


def parse_pss(text: str) -> int:
    """``Pss`` in bytes from the text of ``/proc/<pid>/smaps_rollup`` (0 if the line is absent)."""
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def parse_stat_ppid(text: str) -> int:
    """The parent pid from the text of ``/proc/<pid>/stat`` (the command name may contain spaces and parens)."""
    return int(text[text.rindex(")") + 2 :].split()[1])


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None  # the process exited (or is not ours) between listing and reading


def ppid_map() -> dict[int, int]:
    """``{pid: parent pid}`` of every process visible in ``/proc``."""
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            text = _read(f"/proc/{entry}/stat")
            if text:
                out[int(entry)] = parse_stat_ppid(text)
    return out


def _children_from_tasks(pid: int) -> list[int] | None:
    tasks = Path(f"/proc/{pid}/task")
    files = list(tasks.glob("*/children")) if tasks.is_dir() else []
    if not files:
        return None
    kids: list[int] = []
    for f in files:
        text = _read(str(f))
        kids += [int(x) for x in (text or "").split()]
    return kids


def descendants(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """``root`` and all its live descendants, root first (breadth first).

    Args:
        root: pid of the tree's root.
        parents: a ``ppid_map()`` to reuse across several roots in one sample (else read here when needed).
    """
    if not os.path.exists(f"/proc/{root}"):
        return []
    if parents is None and _children_from_tasks(root) is None:
        parents = ppid_map()
    children: dict[int, list[int]] = {}
    for pid, ppid in (parents or {}).items():
        children.setdefault(ppid, []).append(pid)
    out, frontier = [root], [root]
    while frontier:
        pid = frontier.pop(0)
        kids = children.get(pid, []) if parents is not None else (_children_from_tasks(pid) or [])
        for kid in sorted(kids):
            if kid not in out:  # pids are unique at one instant; guards against a reused pid in a racy read
                out.append(kid)
                frontier.append(kid)
    return out


@dataclass(frozen=True, kw_only=True)
class TreeMemory:
    """Memory of one process tree at one instant (bytes)."""

    rss_bytes: int
    """Sum of VmRSS over the tree's processes."""
    hwm_bytes: int
    """Sum of VmHWM (each process's own peak RSS so far) over the tree's live processes."""
    pss_bytes: int
    """Sum of Pss (shared pages split between their users); 0 where smaps_rollup is unreadable."""
    pids: tuple[int, ...]
    """The processes counted, root first."""
    root_rss_bytes: int = 0
    """VmRSS of the root alone (the long-lived node process, without short-lived workers)."""


def tree_memory(root: int, parents: dict[int, int] | None = None, with_pss: bool = True) -> TreeMemory:
    """RSS, high-water mark and PSS summed over ``root`` and its descendants (zeros if ``root`` is gone)."""
    rss = hwm = pss = root_rss = 0
    pids = []
    for pid in descendants(root, parents):
        status = _read(f"/proc/{pid}/status")
        if status is None:
            continue
        values = parse_status(status)
        rss += values["VmRSS"]
        root_rss = values["VmRSS"] if pid == root else root_rss
        hwm += values["VmHWM"]
        if with_pss:
            pss += parse_pss(_read(f"/proc/{pid}/smaps_rollup") or "")
        pids.append(pid)
    return TreeMemory(rss_bytes=rss, hwm_bytes=hwm, pss_bytes=pss, pids=tuple(pids), root_rss_bytes=root_rss)


def slope_per_min(times_s: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of ``values`` against ``times_s``, per minute (same unit as ``values``).

    Raises:
        ValueError: fewer than two points, mismatched lengths, or all times equal.
    """
    if len(times_s) != len(values):
        raise ValueError(f"slope: {len(times_s)} times but {len(values)} values")
    if len(times_s) < 2:
        raise ValueError(f"slope: need at least 2 points, got {len(times_s)}")
    n = len(times_s)
    t_mean = sum(times_s) / n
    v_mean = sum(values) / n
    var = sum((t - t_mean) ** 2 for t in times_s)
    if var == 0.0:
        raise ValueError("slope: all sample times are equal")
    cov = sum((t - t_mean) * (v - v_mean) for t, v in zip(times_s, values, strict=True))
    return cov / var * 60.0


def parse_memory_bound_mib(docstring: str | None) -> float | None:
    """The documented bound in MiB: first MiB/GiB figure of the ``Memory bound:`` paragraph, else None."""
    if not docstring:
        return None
    paragraph = _BOUND_PARAGRAPH.search(docstring)
    if paragraph is None:
        return None
    figure = _FIGURE.search(paragraph.group(1))
    if figure is None:
        return None
    value = float(figure.group(1))
    return value * 1024.0 if figure.group(2) == "GiB" else value


def module_docstring(module: str) -> str | None:
    """A module's docstring read from its source file without importing it (no torch/rclpy in the caller)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return ast.get_docstring(ast.parse(Path(spec.origin).read_text()))


def machine_info() -> dict[str, object]:
    """CPU model, logical cores and total RAM of this machine (from ``/proc``)."""
    cpu = "unknown"
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu = line.partition(":")[2].strip()
            break
    total_kib = 0
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            total_kib = int(line.split()[1])
    return {"cpu_model": cpu, "cores": os.cpu_count(), "ram_total_gib": round(total_kib / 1024**2, 2)}


# Fields of the aggregate ``cpu`` line of ``/proc/stat`` (proc(5)); guest time is already inside user time.
_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def parse_proc_stat_cpu(text: str) -> dict[str, int]:
    """Clock ticks per state of all CPUs together, from the ``cpu`` line of ``/proc/stat``.

    Raises:
        ValueError: no ``cpu`` line, or fewer than the eight fields above (kernels before 2.6.11).
    """
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            if len(fields) < 1 + len(_STAT_FIELDS):
                raise ValueError(f"/proc/stat cpu line has {len(fields) - 1} fields, need {len(_STAT_FIELDS)}")
            return {name: int(v) for name, v in zip(_STAT_FIELDS, fields[1:], strict=False)}
    raise ValueError("/proc/stat has no aggregate cpu line")


def cpu_shares(before: dict[str, int], after: dict[str, int]) -> dict[str, float] | None:
    """Share of all CPUs' time between two :func:`parse_proc_stat_cpu` readings: busy, idle and stolen.

    ``steal`` is time the hypervisor gave this VM's virtual CPUs to someone else: a loop that misses its ticks
    on a VM with a large steal share is short of CPU the machine never had, not slow code. None if no time
    passed (same reading twice).
    """
    delta = {k: after[k] - before[k] for k in _STAT_FIELDS}
    total = sum(delta.values())
    if total <= 0:
        return None
    busy = delta["user"] + delta["nice"] + delta["system"] + delta["irq"] + delta["softirq"]
    return {"busy": round(busy / total, 4), "idle": round((delta["idle"] + delta["iowait"]) / total, 4),
            "steal": round(delta["steal"] / total, 4)}


class MachineCpu:
    """CPU shares of the whole machine over a run: ``start()`` at its beginning, ``shares()`` at its end.

    Off Linux (no ``/proc/stat``) every reading is None, and so is the result.
    """

    def __init__(self) -> None:
        self._start: dict[str, int] | None = None

    @staticmethod
    def read() -> dict[str, int] | None:
        """The ``cpu`` line of ``/proc/stat`` now; None where there is none or it cannot be parsed."""
        text = _read("/proc/stat")
        try:
            return None if text is None else parse_proc_stat_cpu(text)
        except ValueError:
            return None

    def start(self) -> None:
        """Take the reading the run is measured from."""
        self._start = self.read()

    def shares(self) -> dict[str, float] | None:
        """:func:`cpu_shares` since :meth:`start`; None before it, off Linux, or with no time passed."""
        now = self.read()
        return None if self._start is None or now is None else cpu_shares(self._start, now)


def mib(values: Iterable[int]) -> list[float]:
    """Bytes -> MiB, rounded to 0.1."""
    return [round(v / MIB, 1) for v in values]


def parse_stat_cpu_ticks(text: str) -> tuple[int, int]:
    """``(utime + stime, cutime + cstime)`` clock ticks of a ``/proc/<pid>/stat`` line.

    The command name (field 2) may hold spaces and parentheses, so fields are counted after its last ``)``.
    """
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): utime, stime, cutime, cstime are fields 14-17.
    return int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def tree_cpu_seconds(root: int, parents: dict[int, int] | None = None) -> float:
    """CPU seconds of ``root``, its live descendants and the children ``root`` already reaped.

    Reaped children matter for the finetuner, whose worker processes exit after each round. 0.0 if ``root``
    is gone.
    """
    hz = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in descendants(root, parents):
        stat = _read(f"/proc/{pid}/stat")
        if stat is None:
            continue
        own, reaped = parse_stat_cpu_ticks(stat)
        total += own + (reaped if pid == root else 0)
    return total / hz
