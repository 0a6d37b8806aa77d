"""Finetuner node: replay chunks -> dynamics-only finetune in a separate process -> gated, atomic checkpoint.

Listens to ``replay/chunk_ready`` as a doorbell only: the counts in it are never believed (anyone on the
domain can publish one), the node counts the sealed chunks in ``replay_dir`` instead (at start and at the
next check after a chunk_ready; an announced count the disk does not hold is logged and counted in
``chunk_counts_refused``). Once ``min_new_steps`` steps arrived since the last round, it runs ONE round
in a worker process (``multiprocessing`` spawn, so torch lives outside this process; the worker caps
torch to ``torch_threads`` threads, runs under ``cpu_policy`` (Linux SCHED_IDLE by default) at ``nice``,
and runs on a CPU at most ``cpu_duty`` of the time (it sleeps in proportion to the CPU time it used), so the
control loop keeps its CPU time;
``simdist bench graph`` measures what each setting leaves it). With ``loop_guard`` (the default) the share
actually used follows the control loop's health: :class:`simdist_core.training.adapt.LoopGuard` reads the
planner's ticks, missed ticks and ticks longer than a period (``deadline_misses``) from ``/diagnostics`` (the
status named ``loop_status``), learns how many the loop misses and runs late between rounds, and during a round
halves the worker's duty whenever the loop misses or runs late more than that, raising it again while the loop
keeps up (between ``min_duty`` and ``cpu_duty``; the worker reads it from shared memory after every update):
``simdist_core.training.adapt.finetune_dynamics`` on the replay dataset (checksums verified on open),
validated on the newest ``holdout_fraction`` of the steps (held out, the data the robot faces next).
If the gate passes, the worker writes ``<output_dir>/v<version>`` with
``simdist_core.checkpoint.save_checkpoint`` (atomic: temp dir, fsync, rename; never overwritten;
version = parent + 1), checks that only the dynamics changed (part hashes), and the node announces
on ``model/update`` (``qos.ANNOUNCE``, transient-local) the JSON
``{path, version, parent_version, parts_changed: ["dynamics"], sha256, parts, tag, val_loss, ...}``
(:mod:`simdist_ros.model_update`): ``sha256`` and ``parts`` are the manifest's hashes and ``tag`` their
HMAC with the key in ``update_key_file``, which the planner shares. A failed gate is logged and not announced.

Restart: the newest valid checkpoint in ``output_dir`` becomes the parent (announced once, so a
planner that started from the shipped checkpoint catches up); the newest step count trained on is
recovered from its manifest. Only if it descends from the configured ``checkpoint`` (same config, every
part but the dynamics bit-identical): checkpoints another model left in ``output_dir`` are logged and
ignored, so a new shipped model is never swapped for an old lineage (versions still count on above them).

Memory: this process holds no model and no data; it imports torch once to verify its own checkpoints at
start (~260 MB RSS measured). The worker holds the model (with `anchor_weight` > 0, the configured checkpoint
too, loaded each round) and memory-maps the dataset. It is started with the
node, lowers its priority and imports torch then (not in the middle of the robot's run), and is replaced after
:data:`WORKER_ROUNDS` rounds, so nothing accumulates over a long session. Why it is kept between rounds: a
fresh worker per round spent ~3 s of CPU importing torch and ~3 s more before its first update (2 s of them
building the first optimizer), none of it paced; on a 2-vCPU VM that start cost the planner 10-20 missed
ticks a second for ~14 s at every round, even under SCHED_IDLE (``simdist bench graph``). The gate's held-out
evaluation is paced like the updates.

Memory bound: 1.5 GiB RSS for the process tree, worker included (soak peak 818 MiB Go2, 1029 MiB UR5e).
The worker memory-maps the replay dataset, so pages it touches count while it runs.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from simdist_core.checkpoint_auth import read_key, version_dir_name
from simdist_core.training.adapt import LoopGuard
from std_msgs.msg import String

from simdist_ros import msgs, qos, topics
from simdist_ros.model_update import make_announcement
from simdist_ros.params import P, declare_table
from simdist_ros.runtime import process_counts, resolve_checkpoint, run_node

_VERSION_DIR = re.compile(r"^v(\d+)$")


@dataclass(frozen=True, kw_only=True)
class FinetunerParams:
    """Values of :data:`PARAMS`, read once at start."""

    robot: str
    checkpoint: str
    replay_dir: str
    output_dir: str
    min_new_steps: int
    steps_per_round: int
    batch_size: int
    holdout_fraction: float
    min_improvement: float
    recent_steps: int
    anchor_weight: float
    anchor_noise_std: float
    anchor_start_s: float
    max_rounds: int
    torch_threads: int
    large_pages: bool
    nice: int
    cpu_policy: str
    cpu_duty: float
    loop_guard: bool
    min_duty: float
    loop_status: str
    check_period_s: float
    update_key_file: str

    def __post_init__(self) -> None:
        if not self.update_key_file:
            raise ValueError("update_key_file must name the key file shared with the planner (owner-only; "
                             "simdist launch creates <output_dir>/launch/model_update.key), got ''")
        if self.cpu_policy not in CPU_POLICIES:
            raise ValueError(f"cpu_policy must be one of {CPU_POLICIES}, got {self.cpu_policy=!r}")
        if not self.replay_dir or not self.output_dir:
            raise ValueError(f"replay_dir and output_dir must be set, got {self.replay_dir=!r}, {self.output_dir=!r}")


PARAMS = (
    P("robot", "go2", "Robot name (empty = from the checkpoint)", read_only=True),
    P("checkpoint", "", "Initial checkpoint; empty = <repo>/checkpoints/<robot>", read_only=True),
    P("replay_dir", "runs/replay", "Dataset folder the replay buffer writes", read_only=True),
    P("output_dir", "runs/checkpoints", "Folder for finetuned checkpoints v<version>", read_only=True),
    P("min_new_steps", 500, "New replay steps needed before a round", lo=1, hi=10_000_000),
    P("steps_per_round", 200, "Optimizer updates per round", lo=1, hi=1_000_000),
    P("batch_size", 32, "Windows per update", lo=1, hi=4096),
    P("holdout_fraction", 0.2, "Newest fraction of steps held out for the validation gate", lo=0.01, hi=0.9),
    P("min_improvement", 0.0, "Gate: new held-out loss < old * (1 - this)", lo=0.0, hi=0.99),
    P("recent_steps", 0, "Train only on windows in the newest this-many steps (0 = all)", lo=0, hi=100_000_000),
    P("anchor_weight", 0.0, "Action-effect anchor's weight (0 = the method as published): keeps every round's "
      "dynamics' response to perturbed actions near the configured checkpoint's (FinetuneConfig.anchor_weight)",
      lo=0.0, hi=1000.0),
    P("anchor_noise_std", 0.5, "Std of the anchor's action perturbations ([-1, 1] units; the cpu planner's max_std)",
      lo=0.01, hi=2.0),
    P("anchor_start_s", 0.0, "Anchor only the windows that start within this many seconds of a reset "
      "(0 = every window; FinetuneConfig.anchor_start_s)", lo=0.0, hi=3600.0),
    P("max_rounds", 0, "Stop after this many rounds (0 = no limit)", lo=0, hi=1_000_000),
    P("torch_threads", 1, "torch threads in the worker process", lo=1, hi=64, read_only=True),
    P("large_pages", True, "2 MB pages for the worker's large torch tensors (THP_MEM_ALLOC_ENABLE=1 unless the "
      "environment sets it): same arithmetic, a UR5e finetuning step 1.67x as fast (simdist bench train)",
      read_only=True),
    P("nice", 10, "Priority decrease of the worker process (the planner keeps its core)", lo=0, hi=19,
      read_only=True),
    P("cpu_policy", "idle", "Worker CPU scheduling: idle (Linux SCHED_IDLE: only CPU time the control loop "
      "leaves) or nice (the nice value alone)", read_only=True),
    P("cpu_duty", 1.0, "Most share of the time the worker runs on a CPU; after each update it sleeps in proportion "
      "to the CPU time it used (1 = no cap; the update rate scales with it)", lo=0.05, hi=1.0, read_only=True),
    P("loop_guard", True, "Lower the worker's duty (at most cpu_duty) while the planner misses more ticks, or runs "
      "more of them longer than a period, than it does between rounds", read_only=True),
    P("min_duty", 0.1, "loop_guard never sets the duty below this (2-vCPU VM, beside training: with 0.1 the planner "
      "kept >= 99.87 % of its ticks at p99 14-20.4 ms in 5 runs, with 0.25 at 18.8 and 22.5 ms; a 0.05 floor "
      "finished no demo round in 5 minutes)", lo=0.01, hi=1.0, read_only=True),
    P("loop_status", "planner: planner", "Name of the planner's status in /diagnostics that loop_guard watches",
      read_only=True),
    P("check_period_s", 1.0, "How often to check for data and finished rounds (s)", lo=0.05, hi=60.0, read_only=True),
    P("update_key_file", "", "Owner-only key file shared with the planner: announcements are tagged with it",
      read_only=True),
)
"""The node's parameter table."""


CPU_POLICIES = ("idle", "nice")
"""How the worker process shares the CPU with the control loop (see :func:`lower_priority`)."""


def lower_priority(policy: str, nice: int) -> str:
    """Put the calling process behind the control loop; returns the policy actually in force.

    ``idle``: Linux ``SCHED_IDLE``, the scheduler runs the process only on CPU time no normal process
    wants, so on a 2-core machine the encoder, planner and simulator keep their ticks whatever the
    finetuner does (a nice value only weights the share: at nice 10 the worker still took CPU the
    planner needed, and ticks were lost). It needs no privileges. Where it is unavailable (not Linux),
    the nice value is the fallback, and the policy returned says so.
    """
    os.nice(int(nice))
    if policy == "idle" and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            return "idle"
        except OSError:
            pass
    return "nice"


def latest_checkpoint(output_dir: Path) -> tuple[int, Path] | None:
    """Newest ``v<version>`` directory in ``output_dir`` that verifies, or None (bad ones are skipped)."""
    from simdist_core.checkpoint import CheckpointRejected, verify_checkpoint

    found = sorted(((int(m.group(1)), p) for p in output_dir.glob("v*")
                    if (m := _VERSION_DIR.match(p.name)) and p.is_dir()), reverse=True)
    for version, path in found:
        try:
            verify_checkpoint(path)
        except CheckpointRejected:
            continue
        return version, path
    return None


WORKER_ROUNDS = 20
"""Rounds one worker process runs before it is replaced (bounds whatever a long session accumulates)."""

_WORKER_POLICY = "nice"
"""In the worker: the CPU policy its initializer put in force."""


def run_round(job: dict[str, Any]) -> dict[str, Any]:
    """One finetune round in the worker process (at the priority :func:`_init_worker` set); a JSON-ready result.

    Args:
        job: ``parent`` checkpoint, ``replay_dir``, ``output_dir``, ``config`` (FinetuneConfig fields),
            ``cpu_duty``, ``anchor_to`` (the checkpoint the action-effect anchor keeps, or None).
    """
    policy = _WORKER_POLICY
    from simdist_core.checkpoint import load_checkpoint, save_checkpoint
    from simdist_core.config import from_dict
    from simdist_core.data.dataset import Dataset
    from simdist_core.planning.mppi import PlannerConfig
    from simdist_core.training.adapt import DutyCycle, FinetuneConfig, finetune_dynamics

    t0 = time.perf_counter()
    model, manifest = load_checkpoint(job["parent"])
    data = Dataset(job["replay_dir"], verify="open", on_corrupt="skip")
    shared = _SHARED_DUTY
    duty = DutyCycle(float(job.get("cpu_duty", 1.0)), source=None if shared is None else lambda: shared.value)
    anchor_to = load_checkpoint(job["anchor_to"])[0] if job.get("anchor_to") else None
    new, report = finetune_dynamics(model, data, FinetuneConfig(**job["config"]), after_update=duty,
                                    anchor_to=anchor_to)  # fmt: skip
    result: dict[str, Any] = {"data_steps": int(data.n_steps), "report": report.to_json(), "gate": asdict(report.gate),
                              "parent_version": int(manifest.version), "cpu_policy": policy,
                              "cpu_duty": round(duty.effective(), 4), "slept_s": duty.slept_s,
                              "wall_s": time.perf_counter() - t0}
    if not report.gate.passed:
        return result
    version = max(int(manifest.version), _max_version(Path(job["output_dir"]))) + 1
    path = Path(job["output_dir"]) / version_dir_name(version)
    planner = from_dict(PlannerConfig, manifest.planner_config) if manifest.planner_config else None
    saved = save_checkpoint(path, new, version=version, parent_version=int(manifest.version),
                            parts_changed=("dynamics",), planner_config=planner,
                            extra={"finetune": report.to_json(), "data_steps": int(data.n_steps),
                                   "replay_dir": str(job["replay_dir"]), "parent": str(job["parent"])})
    changed = sorted(name for name, digest in saved.parts.items() if digest != manifest.parts[name])
    result.update(path=str(path), version=version, sha256=saved.weights_sha256, parts_changed=changed,
                  wall_s=time.perf_counter() - t0)
    return result


_SHARED_DUTY: Any = None
"""In the worker: the ``multiprocessing.Value`` the node's loop guard writes the duty to (None = fixed duty)."""


def _init_worker(shared_duty: Any, cpu_policy: str, nice: int, torch_threads: int) -> None:  # noqa: ANN401
    """Worker initializer: ignore Ctrl-C, lower the priority, keep the shared duty, import torch.

    Ctrl-C reaches the whole process group; the node stops its worker itself. The shared duty (a
    ``multiprocessing.Value`` or None) is inherited at process start, the only way a synchronized value reaches
    a pool worker. Runs once per worker process, so the priority is lowered once.
    """
    global _SHARED_DUTY, _WORKER_POLICY
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_POLICY = lower_priority(cpu_policy, nice)
    _SHARED_DUTY = shared_duty
    import torch

    torch.set_num_threads(int(torch_threads))
    import simdist_core.training.adapt  # noqa: F401  (the round's imports, paid here at low priority)

    # The first optimizer a process builds costs ~2 s of CPU (torch imports its compiler stack lazily): pay it here.
    weight = torch.zeros(1, requires_grad=True)
    (2.0 * weight).sum().backward()
    torch.optim.Adam([weight]).step()


def _worker_ready() -> str:
    """A no-op job that makes the pool start its worker (and run the initializer) now."""
    return _WORKER_POLICY


def _max_version(output_dir: Path) -> int:
    versions = [int(m.group(1)) for p in output_dir.glob("v*") if (m := _VERSION_DIR.match(p.name))]
    return max(versions, default=-1)


class FinetunerNode(Node):
    """Schedules finetune rounds in a worker process and announces accepted checkpoints."""

    def __init__(self, node_name: str = "finetuner") -> None:
        super().__init__(node_name)
        self.params = p = declare_table(self, PARAMS, FinetunerParams)
        self._key = read_key(Path(p.update_key_file).expanduser())  # fails the start on an unsafe key file
        self.replay_dir = Path(p.replay_dir).expanduser().resolve()
        self.output_dir = Path(p.output_dir).expanduser().resolve()
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.parent = resolve_checkpoint(p.checkpoint, p.robot)
        self.base = self.parent
        """The configured checkpoint: the lineage's root, which the action-effect anchor keeps every round near."""
        self.trained_upto = 0
        self.known_steps = 0
        self.rounds = 0
        self.counts = {"accepted": 0, "gate_failed": 0, "errors": 0, "chunk_ready_malformed": 0,
                       "chunk_counts_refused": 0, "loop_reports_malformed": 0}
        self._rescan = False  # a chunk_ready arrived: count the sealed steps on disk at the next check
        self._announced_total = 0
        self.last_result: dict[str, Any] = {}
        self._future: Future | None = None
        spawn = multiprocessing.get_context("spawn")
        if p.large_pages:  # torch reads it at its first allocation: set before the worker process starts
            os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
        self.guard = LoopGuard(ceiling=p.cpu_duty, floor=min(p.min_duty, p.cpu_duty)) if p.loop_guard else None
        self._shared_duty = spawn.Value("d", self.guard.duty, lock=False) if self.guard else None
        self._loop_counts: tuple[float, float, float] | None = None  # the planner's last (ticks, missed, late)
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=spawn, initializer=_init_worker,
                                         initargs=(self._shared_duty, p.cpu_policy, p.nice, p.torch_threads),
                                         max_tasks_per_child=WORKER_ROUNDS + 1)  # + the start-up job
        self._pool.submit(_worker_ready)  # start the worker now, not in the middle of the robot's run
        self._update_pub = self.create_publisher(String, topics.MODEL_UPDATE, qos.ANNOUNCE)
        self._diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        group = MutuallyExclusiveCallbackGroup()
        self.create_subscription(String, topics.CHUNK_READY, self._on_chunk, qos.ANNOUNCE, callback_group=group)
        self.create_timer(p.check_period_s, self._check, callback_group=group)
        if self.guard is not None:
            self.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self._on_diagnostics, qos.RELIABLE,
                                     callback_group=group)
        self._resume()
        self.get_logger().info(f"finetuner: parent {self.parent}, replay {self.replay_dir}, output {self.output_dir}, "
                               f"round every {p.min_new_steps} new steps ({p.steps_per_round} updates)")

    def _resume(self) -> None:
        """Continue from the newest own checkpoint and announce it (a restarted graph catches up)."""
        latest = latest_checkpoint(self.output_dir)
        if latest is not None:
            from simdist_core.checkpoint import descends_from, verify_checkpoint

            version, path = latest
            manifest = verify_checkpoint(path)
            if descends_from(manifest, verify_checkpoint(self.parent)):
                self.parent = path
                self.trained_upto = int(manifest.extra.get("data_steps", 0))
                self._announce(path, list(manifest.parts_changed), resumed=True,
                               gate=(manifest.extra.get("finetune") or {}).get("gate", {}))
            else:
                self.get_logger().warning(
                    f"{path} is not a dynamics-only descendant of {self.parent} (another model or config left it "
                    f"in {self.output_dir}); starting from {self.parent}. Use a fresh output_dir per model.")
        self.known_steps = self._steps_on_disk()

    def _steps_on_disk(self) -> int:
        from simdist_core.data.chunks import list_chunks, read_meta
        from simdist_core.data.dataset import list_shards

        if not self.replay_dir.is_dir():
            return 0
        return sum(read_meta(c)["n_steps"] for shard in list_shards(self.replay_dir) for _, c in list_chunks(shard))

    def _on_chunk(self, msg: String) -> None:
        """A doorbell: anyone on the domain can publish a count, so only the sealed chunks on disk are counted.

        The disk is scanned at the next check, at most once per ``check_period_s`` however many arrive.
        """
        try:
            data = json.loads(msg.data[:65536])
            total = data["total_steps"]
            if isinstance(total, bool) or not isinstance(total, int):
                raise TypeError(f"total_steps must be an integer, got {total!r}")
        except (ValueError, KeyError, TypeError) as exc:
            self.counts["chunk_ready_malformed"] += 1
            self.get_logger().warning(f"ignoring malformed chunk_ready {msg.data[:200]!r}: {exc}",
                                      throttle_duration_sec=5.0)
            return
        self._announced_total = max(self._announced_total, total)
        self._rescan = True

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        """Feed the loop guard from the planner's cumulative tick counters (untrusted: bounded effect)."""
        for status in msg.status:
            if status.name != self.params.loop_status:
                continue
            values = msgs.status_values(status)
            try:  # a planner without deadline_misses reports no late ticks
                counts = (float(values["ticks"]), float(values["missed_ticks"]),
                          float(values.get("deadline_misses", "0")))
            except (KeyError, ValueError):
                self.counts["loop_reports_malformed"] += 1
                return
            last, self._loop_counts = self._loop_counts, counts
            if last is None or any(now < before for now, before in zip(counts, last, strict=True)):
                return  # first report, or a restarted planner
            training = self._future is not None and not self._future.done()
            duty = self.guard.report(counts[0] - last[0], counts[1] - last[1], training=training,
                                     late=counts[2] - last[2])
            self._shared_duty.value = duty
            return

    def _count_sealed_steps(self) -> None:
        """``known_steps`` from the disk; an announced total the disk does not hold is logged and counted."""
        self._rescan = False
        on_disk = self._steps_on_disk()
        # One shard per replay node: an honest total is its shard's, so never more than all shards hold.
        if self._announced_total > on_disk:
            self.counts["chunk_counts_refused"] += 1
            self.get_logger().warning(f"chunk_ready announced {self._announced_total} sealed steps, but {on_disk} "
                                      f"are on disk in {self.replay_dir}; counting only those on disk",
                                      throttle_duration_sec=5.0)
        self._announced_total = 0
        self.known_steps = on_disk

    def _check(self) -> None:
        p = self.params
        if self._rescan:
            self._count_sealed_steps()
        if self._future is not None and self._future.done():
            self._finish(self._future)
            self._future = None
        if self._future is None and self.known_steps - self.trained_upto >= p.min_new_steps and (
                not p.max_rounds or self.rounds < p.max_rounds):
            self._start_round()
        self._publish_diagnostics()

    def _start_round(self) -> None:
        p = self.params
        config = {"steps": p.steps_per_round, "batch_size": p.batch_size, "holdout_fraction": p.holdout_fraction,
                  "min_improvement": p.min_improvement, "recent_steps": p.recent_steps, "seed": self.rounds,
                  "anchor_weight": p.anchor_weight, "anchor_noise_std": p.anchor_noise_std,
                  "anchor_start_s": p.anchor_start_s}
        job = {"parent": str(self.parent), "replay_dir": str(self.replay_dir), "output_dir": str(self.output_dir),
               "config": config, "cpu_duty": p.cpu_duty, "anchor_to": str(self.base) if p.anchor_weight else None}
        self.rounds += 1
        self._round_steps = self.known_steps
        self.get_logger().info(f"round {self.rounds}: finetuning {self.parent.name} on {self.known_steps} steps")
        self._future = self._pool.submit(run_round, job)

    def _finish(self, future: Future) -> None:
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001  (worker boundary: any failure is logged, counted, survived)
            self.counts["errors"] += 1
            self.get_logger().error(f"finetune round {self.rounds} failed: {type(exc).__name__}: {exc}")
            self.trained_upto = self._round_steps  # wait for new data before retrying
            return
        self.last_result = result
        self.trained_upto = max(self.trained_upto, result["data_steps"])
        gate = result["gate"]
        if "path" not in result:
            self.counts["gate_failed"] += 1
            self.get_logger().warning(f"round {self.rounds}: gate failed, not announced: {gate['reason']}")
            return
        if result["parts_changed"] != ["dynamics"]:
            self.counts["errors"] += 1
            self.get_logger().error(f"round {self.rounds}: {result['path']} changed {result['parts_changed']}, "
                                    "expected only ['dynamics']; not announced")
            return
        self.counts["accepted"] += 1
        self.parent = Path(result["path"])
        self._announce(self.parent, result["parts_changed"], val_loss=gate["new_loss"], old_val_loss=gate["old_loss"],
                       gate=gate, data_steps=result["data_steps"], wall_s=result["wall_s"])

    def _announce(self, path: Path, parts_changed: list[str], **extra: Any) -> None:  # noqa: ANN401
        """Publish the tagged announcement of the checkpoint at ``path``, from its manifest as it is on disk."""
        from simdist_core.checkpoint import CheckpointRejected, read_manifest

        try:
            manifest = read_manifest(path)
        except CheckpointRejected as exc:  # gone or damaged since it was written: nothing to announce
            self.counts["errors"] += 1
            self.get_logger().error(f"not announcing {path}: {exc.reason}")
            return
        self._update_pub.publish(String(data=make_announcement(manifest, self._key, path, parts_changed, **extra)))
        self.get_logger().info(f"announced model v{manifest.version} at {path}")

    def _publish_diagnostics(self) -> None:
        values = {"rounds": self.rounds, "running": self._future is not None, "known_steps": self.known_steps,
                  "trained_upto": self.trained_upto, "parent": str(self.parent), **self.counts,
                  **process_counts()}
        if self.last_result:  # what the last round cost: its wall time under the worker's CPU policy
            values.update(last_round_wall_s=round(float(self.last_result.get("wall_s", float("nan"))), 2),
                          cpu_policy=self.last_result.get("cpu_policy", "?"),
                          cpu_duty=self.last_result.get("cpu_duty", 1.0))
        if self.guard is not None:
            values.update(loop_guard_duty=round(self.guard.duty, 3),
                          loop_baseline_missed=round(self.guard.baseline, 4),
                          loop_baseline_late=round(self.guard.late_baseline, 4),
                          loop_guard_backoffs=self.guard.backoffs)
        level = "error" if self.counts["errors"] else "ok"
        status = msgs.make_status(f"{self.get_name()}: finetuner", level, f"parent {self.parent.name}", values)
        self._diag_pub.publish(msgs.make_diagnostics([status], self.get_clock().now().nanoseconds))

    def close(self) -> None:
        """Stop the worker (a running round is abandoned: it never wrote a partial checkpoint)."""
        for proc in list(getattr(self._pool, "_processes", {}).values()):
            proc.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)


def main(args: list[str] | None = None) -> int:
    """Run the finetuner until Ctrl-C."""
    return run_node(FinetunerNode, args, threads=2)
