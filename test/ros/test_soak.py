"""Memory sampler of ``simdist bench soak`` against real processes (no graph is started here)."""

import os
import subprocess
import sys

import pytest
from simdist_ros.procmem import MIB

from simdist_ros import procmem, soak

ALLOC_MIB = 160

# A child that touches ALLOC_MIB of memory, starts a grandchild, then frees the memory on request.
CHILD = f"""
import subprocess, sys
grandchild = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()"], stdin=subprocess.PIPE)
block = bytes(range(256)) * ({ALLOC_MIB} * 1024 * 1024 // 256)   # every page written: resident
print("allocated", grandchild.pid, flush=True)
sys.stdin.readline()
del block
print("freed", flush=True)
sys.stdin.readline()
grandchild.stdin.close()
grandchild.wait()
"""


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def _step(proc, expect):
    line = proc.stdout.readline().split()
    assert line and line[0] == expect, line
    return line


@pytest.mark.timeout(120)
def test_tree_memory_sees_child_allocation_grandchild_and_high_water_mark(child):
    grandchild = int(_step(child, "allocated")[1])

    # the tree is found both through a ppid map and through the default lookup
    tree = procmem.descendants(child.pid)
    assert tree[0] == child.pid and grandchild in tree
    assert procmem.descendants(child.pid, procmem.ppid_map()) == tree
    assert procmem.descendants(os.getpid(), procmem.ppid_map())[:1] == [os.getpid()]
    assert child.pid in procmem.descendants(os.getpid())

    held = procmem.tree_memory(child.pid)
    alone = procmem.tree_memory(child.pid, {child.pid: 0})  # root only: a parents map without its children
    assert alone.pids == (child.pid,) and set(held.pids) == {child.pid, grandchild}
    assert ALLOC_MIB * MIB <= alone.rss_bytes <= (ALLOC_MIB + 120) * MIB, alone
    assert held.rss_bytes > alone.rss_bytes  # the grandchild's interpreter counts too
    assert held.root_rss_bytes == alone.root_rss_bytes == alone.rss_bytes or abs(
        held.root_rss_bytes - alone.rss_bytes) < 4 * MIB  # the root alone (read twice, may move a little)
    assert held.hwm_bytes >= held.rss_bytes
    if os.path.exists("/proc/self/smaps_rollup"):  # Linux >= 4.14
        assert 0 < held.pss_bytes <= held.rss_bytes

    child.stdin.write("\n")
    child.stdin.flush()
    _step(child, "freed")
    freed = procmem.tree_memory(child.pid, {child.pid: 0})
    assert freed.rss_bytes < alone.rss_bytes - (ALLOC_MIB // 2) * MIB, (alone, freed)  # RSS went down ...
    assert freed.hwm_bytes >= ALLOC_MIB * MIB  # ... the high-water mark kept the peak

    child.stdin.write("\n")
    child.stdin.flush()
    assert child.wait(timeout=30) == 0
    gone = procmem.tree_memory(child.pid)
    assert gone.pids == () and gone.rss_bytes == 0


def test_parse_status_real_and_malformed():
    values = procmem.parse_status(open("/proc/self/status").read())
    assert 0 < values["VmRSS"] <= values["VmHWM"]
    assert procmem.parse_status("Name:\tkthreadd\nState:\tS\n") == {"VmRSS": 0, "VmHWM": 0}
    assert procmem.parse_status("VmHWM:\t  2048 kB\nVmRSS:\t1024 kB\n") == {"VmRSS": 1024 * 1024, "VmHWM": 2048 * 1024}
    with pytest.raises(ValueError, match="VmRSS"):
        procmem.parse_status("VmRSS:\tlots\n")
    assert procmem.parse_pss("Rss: 10 kB\nPss: 7 kB\n") == 7 * 1024 and procmem.parse_pss("") == 0


def test_parse_stat_ppid_with_odd_command_names():
    assert procmem.parse_stat_ppid("42 (a) b (c)) S 17 42 42 0") == 17
    assert procmem.parse_stat_ppid(open(f"/proc/{os.getpid()}/stat").read()) == os.getppid()


def test_slope_per_min():
    t = [0.0, 30.0, 60.0, 90.0]
    assert procmem.slope_per_min(t, [100.0, 101.0, 102.0, 103.0]) == pytest.approx(2.0)
    assert procmem.slope_per_min(t, [5.0, 5.0, 5.0, 5.0]) == 0.0
    assert procmem.slope_per_min([0.0, 60.0, 120.0], [10.0, 4.0, 10.0]) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="at least 2"):
        procmem.slope_per_min([1.0], [1.0])
    with pytest.raises(ValueError, match="equal"):
        procmem.slope_per_min([1.0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="values"):
        procmem.slope_per_min([1.0, 2.0], [1.0])


def test_cpu_shares_from_proc_stat_count_steal_and_refuse_malformed_lines():
    """Busy, idle and stolen shares of the machine between two readings; the real /proc/stat parses."""
    before = procmem.parse_proc_stat_cpu("cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    after = procmem.parse_proc_stat_cpu("intr 5\ncpu  160 0 70 860 10 0 0 100 7 0\n")
    # 60 user + 20 system busy, 60 idle, 60 steal of 200 ticks (guest time, field 9, is inside user).
    assert procmem.cpu_shares(before, after) == {"busy": 0.4, "idle": 0.3, "steal": 0.3}
    assert procmem.cpu_shares(after, after) is None
    with pytest.raises(ValueError, match="need 8"):
        procmem.parse_proc_stat_cpu("cpu 1 2 3 4\n")
    with pytest.raises(ValueError, match="no aggregate cpu line"):
        procmem.parse_proc_stat_cpu("cpu0 1 2 3 4 5 6 7 8\n")
    machine = procmem.MachineCpu()
    assert machine.shares() is None  # not started
    machine.start()
    sum(i * i for i in range(2_000_000))  # burn some CPU so time passes on every clock
    shares = machine.shares()
    assert shares is not None and set(shares) == {"busy", "idle", "steal"}
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-3) and shares["busy"] > 0


def test_parse_memory_bound():
    doc = "Node.\n\nMemory bound: 600 MiB RSS for the process tree\n(the worker holds ~2 GiB at most).\n\nLater: 9 MiB."
    assert procmem.parse_memory_bound_mib(doc) == 600.0
    assert procmem.parse_memory_bound_mib("X.\n\n    Memory bound: 1.5 GiB (tree).\n") == 1536.0
    # a "Memory bound:" paragraph without a MiB/GiB figure, figures outside it, no docstring: undocumented
    assert procmem.parse_memory_bound_mib("X.\n\nMemory bound: one message, ~13 KB.\n\nIt uses 5 MiB.") is None
    assert procmem.parse_memory_bound_mib("Memory: ~260 MB RSS measured.") is None
    assert procmem.parse_memory_bound_mib(None) is None
    # read from a real module's source without importing it
    assert "Memory bound:" in procmem.module_docstring("simdist_ros.procmem")
    assert procmem.module_docstring("simdist_ros.no_such_module") is None


def test_summarize_and_totals():
    s = soak.Series("planner", "m", 300.0)
    for i in range(11):  # 0..100 s, RSS 200 MiB growing 0.5 MiB per 10 s after 50 s; HWM peak 250 MiB
        rss = 200 + max(0, i - 5) * 0.5
        s.add(i * 10.0, procmem.TreeMemory(rss_bytes=int(rss * MIB), hwm_bytes=int(250 * MIB), pss_bytes=int(rss * MIB),
                                           pids=(1, 2), root_rss_bytes=int(100 * MIB)))
    row = soak.summarize(s, warmup_s=20.0)
    assert row["start_mib"] == 200.0 and row["end_mib"] == 202.5 and row["peak_mib"] == 250.0
    assert row["slope_mib_per_min"] == pytest.approx(3.0) and row["verdict"] == "PASS" and row["max_processes"] == 2
    assert row["root_end_mib"] == 100.0 and row["root_slope_mib_per_min"] == 0.0
    assert soak.summarize(soak.Series("x", "m", 240.0, s.times_s, s.rss_bytes, s.hwm_bytes, s.pss_bytes),
                          20.0)["verdict"] == "FAIL"
    assert soak.summarize(soak.Series("y", "m", None, s.times_s, s.rss_bytes, s.hwm_bytes, s.pss_bytes),
                          20.0)["verdict"] == "undocumented"
    assert soak.summarize(soak.Series("z", "m", 1.0), 20.0)["verdict"] == "NO DATA"
    total = soak.totals([s], soak.Series("monitor", "m", None))
    assert total["sum_of_node_peaks_mib"] == 250.0 and total["peak_simultaneous_rss_mib"] == 202.5
    assert total["verdict"] == "PASS"
    table = soak.format_table([row], total)
    assert "planner" in table and "PASS" in table and "8192" in table

    args = soak._parse(["--minutes", "2", "--warmup-s", "20"])
    report = soak.build_report(args, {"planner": s, "encoder": soak.Series("encoder", "m", None, s.times_s[:3],
                                                                           s.rss_bytes[:3], s.hwm_bytes[:3],
                                                                           s.pss_bytes[:3], s.root_rss_bytes[:3])},
                               soak.Series("monitor", "m", None), {"task": "go2/flat"}, soak.Path("/ck"))
    assert report["undocumented"] == ["encoder"] and report["failed_bounds"] == []
    assert report["total"]["sum_of_node_peaks_mib"] == 500.0 and report["machine"]["cores"] == os.cpu_count()
    assert report["series_mib"]["planner"]["rss"][-1] == 202.5


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        soak.main(["--minutes", "1", "--warmup-s", "60"])
    assert exc.value.code == 2
    assert "warmup_s" in capsys.readouterr().err
