"""Dynamics-only finetuning as a library call, plus the validation gate (used by CLI, benchmark, ROS node).

``finetune_dynamics(model, data, cfg) -> (new_model, report)`` never touches ``model``: it trains a
deep copy, evaluates old and new on held-out *recent* windows (the newest fraction of the data,
which is what the robot will face next) and says in ``report.gate`` whether the new model is
better. Callers decide what to do with a failed gate; the CLI refuses to write it.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from simdist_core.data.dataset import Dataset
from simdist_core.data.sampler import WindowSampler, concat_batches
from simdist_core.training.anchor import ActionEffectAnchor
from simdist_core.training.common import OptimConfig
from simdist_core.training.trainer import Batch, DynamicsFinetuner, evaluate_loss, finetune_loss_weights

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class FinetuneConfig:
    """Supervised latent-consistency finetuning of named parts (reference: dynamics, batch 32, Adam 2e-4)."""

    steps: int = 500
    """Optimizer updates."""
    batch_size: int = 32
    """Windows per update."""
    parts: tuple[str, ...] = ("dynamics",)
    """Parts that train; ``("all",)`` trains every part (the full-finetune baseline)."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=2e-4, warmup_steps=50, cosine=False))
    """Optimizer and schedule."""
    holdout_fraction: float = 0.2
    """Newest fraction of the stored steps held out for the validation gate."""
    holdout_windows: int = 256
    """Fixed held-out windows the gate scores (fewer if the holdout is smaller)."""
    recent_steps: int = 0
    """Train only on windows starting in the newest this-many steps (0 = all training data)."""
    min_improvement: float = 0.0
    """Gate passes only if new_loss < old_loss * (1 - min_improvement)."""
    replay_fraction: float = 0.0
    """Share of each training batch drawn from simulation data (the pretraining dataset, ``replay``) instead of
    the robot's own experience; 0 (default) is the method as published. Why one would: the robot's experience
    holds only the actions its planner chose, but the planner ranks many other action sequences every tick, and
    dynamics fitted to the chosen ones alone can forget what the simulation taught about the rest. The gate
    still scores the robot's own held-out windows only."""
    reward_weight: float = 0.0
    """Weight of the reward head's loss on the reward recorded with each transition (on predicted and on encoded
    latents, as in pretraining); 0 (default) is the method as published: the reward head stays frozen. Above 0
    is a departure from it, for data that carries a reward per transition (a robot that computes its reward
    from its own state estimate; in simulation the simulator's): ``parts`` must then include ``reward`` (or be
    ``all``), the reward term's gradient also reaches the dynamics through the predicted latents, and the
    validation gate scores latent consistency plus the weighted reward terms. Why one would: on a floor far
    from the simulation the frozen head can misjudge the states the robot really reaches, and no dynamics-only
    finetune can rank plans better than its head does."""
    reward_on_predicted: bool = True
    """With ``reward_weight`` > 0: also fit the reward head on the dynamics' predicted latents, as in pretraining
    (True), whose gradient then also moves the dynamics; False fits it on the encoder's latents of the states
    the robot reached only, so the dynamics see the latent-consistency gradient alone (the gradient-norm clip,
    shared by all trained parts, is the one coupling left). Why False: fitting on predicted latents made the
    head's error fall but pulled the dynamics away from the encoder's latents."""
    value_weight: float = 0.0
    """Weight of the value head's loss on the value label stored with each step (on predicted and on encoded
    latents, as in pretraining); 0 (default) for any finetune on a robot's experience, which carries no value
    label. For simulation data only: retraining the value head of a pretrained model on relabelled data
    (``simdist value relabel``) without retraining the rest. ``parts`` must then include ``value`` (or be
    ``all``), and the validation gate scores latent consistency plus the weighted value terms."""
    bc_weight: float = 0.0
    """Weight of the policy prior's imitation loss on the clean expert's actions a store holds (its
    ``expert_action`` labels, or the executed actions of clean expert steps); 0 (default) for any finetune on a
    robot's experience, which has no expert. For simulation data only: retraining the prior of a pretrained model
    on the states its own planner visits, each labelled with the privileged expert's action
    (``simdist_core.data.dagger``). ``parts`` must then include ``policy`` (or be ``all``), and the validation
    gate scores latent consistency plus the weighted imitation term."""
    anchor_weight: float = 0.0
    """Weight of the action-effect anchor (``simdist_core.training.anchor``) beside latent consistency; 0
    (default) is the method as published. Above 0 it penalises how far the finetuned dynamics' *difference*
    between the recorded actions and perturbed ones (drawn like the planner's Gaussian candidates) moves from
    the pretrained dynamics' difference, while the prediction for the recorded actions is free to move. Why:
    the robot's experience holds the actions its planner chose, so nothing in it constrains how the other
    candidates turn out, and on the Go2 PTFE slope dynamics finetuned without it no longer told the chosen
    plan from its perturbations after a standing start. Needs a frozen encoder (the two action effects are
    compared in one latent space); the validation gate still scores latent consistency alone."""
    anchor_noise_std: float = 0.5
    """Std of the anchor's action perturbation in [-1, 1] action units: the deployed CPU planner's Gaussian
    sampling std (``planner.max_std`` of the ``cpu`` preset)."""
    anchor_start_s: float = 0.0
    """With ``anchor_weight`` > 0: anchor only the windows that start within this many seconds of their
    episode's start (a reset); 0 (default) anchors every window. Why: on the Go2 PTFE slope the unanchored
    finetune lost the start from rest but adapted the gait once walking (falls after 2 s 62 % -> 18 % of
    episodes), and the anchor everywhere kept the start at the cost of the gait."""
    seed: int = 0
    """Seed of window sampling (and of the anchor's perturbations)."""

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps and batch_size must be >= 1, got {self.steps=}, {self.batch_size=}")
        from simdist_core.models.world_model import PART_NAMES

        if not self.parts or not (self.parts == ("all",) or set(self.parts) <= set(PART_NAMES)):
            raise ValueError(f"parts must be ('all',) or a subset of {list(PART_NAMES)}, got {self.parts=}")
        if not 0.0 < self.holdout_fraction < 1.0:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {self.holdout_fraction=}")
        if self.holdout_windows < 1 or self.recent_steps < 0:
            raise ValueError(f"need holdout_windows >= 1 and recent_steps >= 0, got {self.holdout_windows=}, "
                             f"{self.recent_steps=}")  # fmt: skip
        if not 0.0 <= self.min_improvement < 1.0:
            raise ValueError(f"min_improvement must be in [0, 1), got {self.min_improvement=}")
        if not 0.0 <= self.replay_fraction < 1.0:  # also refuses NaN
            raise ValueError(f"replay_fraction must be in [0, 1), got {self.replay_fraction=}")
        if not (math.isfinite(self.reward_weight) and self.reward_weight >= 0.0):
            raise ValueError(f"reward_weight must be finite and >= 0, got {self.reward_weight=}")
        if self.reward_weight and not (self.parts == ("all",) or "reward" in self.parts):
            raise ValueError(f"reward_weight={self.reward_weight} trains the reward head: add 'reward' to "
                             f"{self.parts=}")  # fmt: skip
        if not (math.isfinite(self.value_weight) and self.value_weight >= 0.0):
            raise ValueError(f"value_weight must be finite and >= 0, got {self.value_weight=}")
        if self.value_weight and not (self.parts == ("all",) or "value" in self.parts):
            raise ValueError(f"value_weight={self.value_weight} trains the value head: add 'value' to {self.parts=}")
        if not (math.isfinite(self.bc_weight) and self.bc_weight >= 0.0):
            raise ValueError(f"bc_weight must be finite and >= 0, got {self.bc_weight=}")
        if self.bc_weight and not (self.parts == ("all",) or "policy" in self.parts):
            raise ValueError(f"bc_weight={self.bc_weight} trains the policy prior: add 'policy' to {self.parts=}")
        if not (math.isfinite(self.anchor_weight) and self.anchor_weight >= 0.0):
            raise ValueError(f"anchor_weight must be finite and >= 0, got {self.anchor_weight=}")
        if not (math.isfinite(self.anchor_start_s) and self.anchor_start_s >= 0.0):
            raise ValueError(f"anchor_start_s must be finite and >= 0, got {self.anchor_start_s=}")
        if not (math.isfinite(self.anchor_noise_std) and self.anchor_noise_std > 0.0):
            raise ValueError(f"anchor_noise_std must be finite and > 0, got {self.anchor_noise_std=}")
        if self.anchor_weight and (self.parts == ("all",) or "encoder" in self.parts):
            raise ValueError(f"anchor_weight={self.anchor_weight} compares action effects in the pretrained "
                             f"encoder's latent space: it needs a frozen encoder, {self.parts=} trains it")  # fmt: skip

    @property
    def loss_weights(self) -> Any:  # noqa: ANN401
        """Weights of training and gate: latent consistency, plus the reward and value terms at their weights."""
        return finetune_loss_weights(self.reward_weight, self.reward_on_predicted, self.value_weight, self.bc_weight)

    def split_batch(self) -> tuple[int, int]:
        """(windows of the robot's experience, windows of replayed simulation data) in each training batch.

        At least one of each when ``replay_fraction`` > 0 (a batch of the robot's data alone otherwise).
        """
        if not self.replay_fraction:
            return self.batch_size, 0
        replay = min(self.batch_size - 1, max(1, round(self.batch_size * self.replay_fraction)))
        return self.batch_size - replay, replay

    @property
    def trainable_parts(self) -> tuple[str, ...] | None:
        """Parts to train, or None for all."""
        return None if self.parts == ("all",) else self.parts


@dataclass(frozen=True)
class GateResult:
    """Verdict of the validation gate on held-out recent data."""

    passed: bool
    """True when the new model predicts the held-out latents better by the required margin."""
    old_loss: float
    """Latent-consistency loss of the old model on the held-out windows."""
    new_loss: float
    """Same for the new model."""
    n_windows: int
    """Held-out windows scored."""
    reason: str
    """One-line explanation (printed and stored in manifests)."""


@dataclass
class FinetuneReport:
    """What one finetune call did and measured."""

    steps: int
    parts: tuple[str, ...]
    train_loss_first: float
    train_loss_last: float
    gate: GateResult
    n_train_windows: int
    n_holdout_windows: int
    wall_s: float
    history: list[dict[str, float]] = field(default_factory=list)
    replay_per_batch: int = 0
    """Windows of each training batch that came from the replayed simulation data."""
    anchor_first: float | None = None
    """The action-effect anchor's unweighted term at the first and the last update (None without the anchor):
    above 0 at the first when the model starts away from the one it is anchored to (a later round)."""
    anchor_last: float | None = None

    def to_json(self) -> dict:
        """JSON-ready summary (no history)."""
        return {
            "steps": self.steps, "parts": list(self.parts), "train_loss_first": self.train_loss_first,
            "train_loss_last": self.train_loss_last, "gate": self.gate.__dict__,
            "n_train_windows": self.n_train_windows, "n_holdout_windows": self.n_holdout_windows,
            "wall_s": self.wall_s, "replay_per_batch": self.replay_per_batch, "anchor_first": self.anchor_first,
            "anchor_last": self.anchor_last,
        }  # fmt: skip


def recent_split(sampler: WindowSampler, fraction: float) -> tuple[WindowSampler, WindowSampler]:
    """(train, holdout) where the holdout is the newest ``fraction`` of the stored steps.

    Whole episodes that start within the newest rows are held out when that leaves training episodes;
    otherwise (one long episode, e.g. a replay buffer) the store is cut in time and training windows
    stop H rows before the cut so no target leaks into training.

    Raises:
        ValueError: either side would be empty (too little data for a gate).
    """
    ds, starts, h = sampler.dataset, sampler.starts, sampler.horizon
    recent = ds.recent_rows(max(1, int(round(ds.n_steps * fraction))))
    start_eps = ds.row_episode[starts]
    # Episodes that begin inside the newest rows (so they lie wholly within them).
    held_eps = np.unique(start_eps[np.isin(ds.episode_starts[start_eps], recent)])
    if held_eps.size and not np.all(np.isin(start_eps, held_eps)):
        is_held = np.isin(start_eps, held_eps)
        train, hold = starts[~is_held], starts[is_held]
    else:
        cut = int(recent.min())
        train, hold = starts[starts < cut - h], starts[starts >= cut]
    if train.size == 0 or hold.size == 0:
        raise ValueError(
            f"cannot split {ds.n_steps} steps ({ds.num_episodes} episodes) into train/holdout at "
            f"holdout_fraction={fraction}: {train.size} train and {hold.size} held-out windows; collect more data"
        )

    def view(rows: np.ndarray, seed: int) -> WindowSampler:
        return WindowSampler(ds, sampler.spec, h, sampler.batch_size, seed, sampler.device, starts=rows)

    return view(train, sampler.seed), view(hold, sampler.seed + 1)


def fixed_batches(sampler: WindowSampler, max_windows: int, batch_size: int, seed: int) -> list[Batch]:
    """A deterministic list of batches over up to ``max_windows`` start rows of ``sampler``."""
    rng = np.random.default_rng(seed)
    rows = sampler.starts if sampler.starts.size <= max_windows else rng.choice(sampler.starts, max_windows, False)
    rows = np.sort(rows)
    return [sampler.sample(starts=rows[i : i + batch_size]) for i in range(0, rows.size, batch_size)]


def _paced(batches: list[Batch], pace: Callable[[], None] | None) -> Iterator[Batch]:
    """Yield ``batches``, calling ``pace`` after each one's work (a :class:`DutyCycle` spreads the evaluation)."""
    for batch in batches:
        yield batch
        if pace is not None:
            pace()


def validation_gate(
    old: torch.nn.Module, new: torch.nn.Module, holdout: list[Batch], min_improvement: float = 0.0,
    pace: Callable[[], None] | None = None, weights: Any = None,  # noqa: ANN401
) -> GateResult:
    """Score old and new on the same held-out windows with the finetune's loss (default: latent consistency).

    With a frozen encoder both models predict the same targets, so the comparison is exact. When
    the encoder was trained too (full finetune) each model is scored against its own encoder's
    targets, which a collapsing encoder can game; the benchmark reports that case separately. ``pace``, if
    given, is called after each held-out batch is scored. ``weights`` (default: latent consistency only) are
    the loss the finetune trained, e.g. with the reward terms of ``FinetuneConfig.reward_weight``.
    """
    weights = finetune_loss_weights() if weights is None else weights
    old_loss = evaluate_loss(old, _paced(holdout, pace), weights)["loss"]
    new_loss = evaluate_loss(new, _paced(holdout, pace), weights)["loss"]
    n = sum(int(b["actions"].shape[0]) for b in holdout)
    labels = [name for name in ("reward", "value") if getattr(weights, name) or getattr(weights, f"{name}_encoded")]
    what = " + ".join(["latent", *labels])
    if not np.isfinite(new_loss):
        return GateResult(False, old_loss, new_loss, n, f"new model's held-out loss is not finite ({new_loss})")
    threshold = old_loss * (1.0 - min_improvement)
    if new_loss < threshold:
        reason = f"held-out {what} loss {old_loss:.5f} -> {new_loss:.5f} ({100 * (1 - new_loss / old_loss):.1f}% lower)"
        return GateResult(True, old_loss, new_loss, n, reason)
    reason = (f"held-out {what} loss {old_loss:.5f} -> {new_loss:.5f}: not below the required {threshold:.5f}; "
              "keeping the old model")  # fmt: skip
    return GateResult(False, old_loss, new_loss, n, reason)


class DutyCycle:
    """Caps the share of time a loop spends working (on a CPU): call it after each unit of work.

    A finetuner that shares a 2-core machine with a 50 Hz control loop must leave the loop its CPU time
    even where the scheduler cannot (two hardware threads of one core share their execution units, so a
    SCHED_IDLE trainer on the other thread still slows the planner). After a unit of work that used ``w``
    seconds of CPU it sleeps ``w * (1 - fraction) / fraction``, so the worker runs on a CPU at most
    ``fraction`` of the time. CPU time, not wall time: a SCHED_IDLE worker on a busy machine waits for idle
    CPU most of the time, and pacing its wall time as well throttled it twice (a 200-update round on a
    2-vCPU VM did not finish in 4.5 minutes at a quarter duty). The cost is plain: an update budget per
    wall second at most ``fraction`` of the unthrottled one.
    ``source``, if given, is read after every unit for the fraction to use (a :class:`LoopGuard` in another
    process sets it), clamped to ``[0.01, fraction]``.
    """

    def __init__(self, fraction: float, clock: Callable[[], float] = time.process_time,
                 sleep: Callable[[float], None] = time.sleep, source: Callable[[], float] | None = None) -> None:
        if not 0.0 < fraction <= 1.0:
            raise ValueError(f"duty cycle fraction must be in (0, 1], got {fraction=}")
        self.fraction = fraction
        self._clock, self._sleep, self._source = clock, sleep, source
        self._work_start = clock()
        self.slept_s = 0.0
        """Total seconds slept (what the cap cost)."""
        self.worked_s = 0.0
        """Total seconds of work timed (CPU seconds with the default clock)."""

    def current(self) -> float:
        """The fraction the next pause uses."""
        if self._source is None:
            return self.fraction
        wanted = float(self._source())
        return min(self.fraction, max(0.01, wanted)) if math.isfinite(wanted) else self.fraction

    def effective(self) -> float:
        """Work over work + sleep so far (1.0 before any work): the duty actually used."""
        total = self.worked_s + self.slept_s
        return self.worked_s / total if total > 0 else 1.0

    def __call__(self) -> None:
        """End one unit of work: sleep for the rest of its share, then start timing the next."""
        work = self._clock() - self._work_start
        self.worked_s += work
        fraction = self.current()
        if fraction < 1.0:
            pause = work * (1.0 - fraction) / fraction
            self._sleep(pause)
            self.slept_s += pause
        self._work_start = self._clock()


@dataclass
class LoopGuard:
    """Sets a trainer's duty cycle from the control loop's missed and late ticks (additive increase, halving decrease).

    Why: on a 2-vCPU VM a finetuner training at full duty, even under SCHED_IDLE, cost the planner ~10 points of
    ticks kept (the two vCPUs share one core's execution units); a fixed low duty protects the loop but slows
    adaptation on every machine, including those with cores to spare. The guard learns the loop's own miss rate
    while no round runs (a loaded machine misses some ticks without any training), and while one runs it
    halves the duty after each report in which the loop missed more than ``baseline + margin`` of its ticks or
    ran more than ``late_baseline + late_margin`` of them longer than a control period, and raises it by
    ``step`` otherwise, always within ``[floor, ceiling]``. It starts at ``floor``. Late ticks are the tick-latency
    half of the loop's budget (p99 within the period = at most 1 % late): on the 2-vCPU VM the planner kept
    98-99.5 % of its ticks beside a guarded trainer at duty 0.35-0.8, but its p99 rose from 15-17 to 24-32 ms;
    at duty 0.1 it was 19 ms.

    Reports come from the planner's diagnostics, which anything on the network could forge: a forged report
    can only move the duty within those bounds (training slower, or as fast as ``ceiling`` allows).
    """

    ceiling: float = 1.0
    floor: float = 0.05
    margin: float = 0.02
    late_margin: float = 0.01
    step: float = 0.05
    baseline_weight: float = 0.1
    """Weight of each idle report in the baseline's moving average."""
    duty: float = field(init=False)
    """The duty the trainer should use now."""
    baseline: float = field(init=False, default=0.0)
    """Moving average of the loop's missed-tick fraction while no round runs."""
    late_baseline: float = field(init=False, default=0.0)
    """Moving average of the fraction of ticks longer than a period while no round runs."""
    backoffs: int = field(init=False, default=0)
    """Reports that halved the duty."""

    def __post_init__(self) -> None:
        if not 0.0 < self.floor <= self.ceiling <= 1.0:
            raise ValueError(f"need 0 < floor <= ceiling <= 1, got {self.floor=}, {self.ceiling=}")
        if not (self.margin >= 0 and self.late_margin >= 0 and self.step > 0 and 0 < self.baseline_weight <= 1):
            raise ValueError(f"need margins >= 0, step > 0, 0 < baseline_weight <= 1; got {self}")
        self.duty = self.floor

    def report(self, ticks: float, missed: float, *, training: bool, late: float = 0.0) -> float:
        """Take one report of the loop and return the new duty.

        ``ticks`` kept, ``missed`` and ``late`` (kept ticks longer than a control period) since the last report.
        """
        total = ticks + missed
        if not (math.isfinite(total) and math.isfinite(late) and ticks >= 0 and missed >= 0 and total > 0
                and 0 <= late <= ticks):
            return self.duty  # nothing to learn from (no ticks, or a malformed report)
        missed_fraction, late_fraction = missed / total, late / total
        if not training:
            self.baseline += self.baseline_weight * (missed_fraction - self.baseline)
            self.late_baseline += self.baseline_weight * (late_fraction - self.late_baseline)
        elif missed_fraction > self.baseline + self.margin or late_fraction > self.late_baseline + self.late_margin:
            self.duty = max(self.floor, 0.5 * self.duty)
            self.backoffs += 1
        else:
            self.duty = min(self.ceiling, self.duty + self.step)
        return self.duty


def finetune_dynamics(
    model: torch.nn.Module,
    data: Dataset | WindowSampler,
    cfg: FinetuneConfig | None = None,
    *,
    holdout: list[Batch] | None = None,
    progress: bool = False,
    after_update: Callable[[], None] | None = None,
    replay: Dataset | None = None,
    anchor_to: torch.nn.Module | None = None,
) -> tuple[torch.nn.Module, FinetuneReport]:
    """Finetune a copy of ``model`` (named parts only) on ``data`` and gate it on recent held-out windows.

    Args:
        model: pretrained ``WorldModel``; left unchanged.
        data: a dataset (windows built with the model's spec) or a ready ``WindowSampler``.
        cfg: settings (default: dynamics only, 500 steps, batch 32).
        holdout: explicit held-out batches for the gate; default = newest ``cfg.holdout_fraction`` of ``data``.
        progress: show a tqdm bar.
        after_update: called after every optimizer update and every held-out batch the gate scores (e.g. a
            :class:`DutyCycle` that leaves CPU time to a control loop on the same machine).
        replay: simulation data (the pretraining dataset) that ``cfg.replay_fraction`` of every training batch is
            drawn from; required when that fraction is above 0, ignored at 0.
        anchor_to: the model whose action effect ``cfg.anchor_weight`` keeps (default ``model``): the pretrained
            one when ``model`` is itself a finetune from an earlier round, so that drift cannot add up over
            rounds. Only read; ignored when the weight is 0.

    Returns:
        (new model, report); ``report.gate.passed`` says whether the new model should be used.

    Raises:
        ValueError: ``cfg.replay_fraction`` > 0 without ``replay`` data, or too little data to split.
    """
    cfg = cfg or FinetuneConfig()
    start = time.perf_counter()
    n_live, n_replay = cfg.split_batch()
    if n_replay and replay is None:
        raise ValueError(f"replay_fraction={cfg.replay_fraction} needs replay data (the pretraining dataset)")
    sampler = data if isinstance(data, WindowSampler) else WindowSampler(data, model.spec, batch_size=cfg.batch_size,
                                                                         seed=cfg.seed)  # fmt: skip
    sampler = WindowSampler(sampler.dataset, sampler.spec, sampler.horizon, n_live, cfg.seed, sampler.device,
                            starts=sampler.starts)  # fmt: skip
    if cfg.reward_weight and "reward" not in sampler.dataset.fields:
        raise ValueError(f"reward_weight={cfg.reward_weight} needs a reward per transition, but {sampler.dataset.path} "
                         "stores none (record it with the experience)")  # fmt: skip
    if cfg.bc_weight and "clean_expert" not in sampler.dataset.fields:
        raise ValueError(f"bc_weight={cfg.bc_weight} needs expert action labels, but {sampler.dataset.path} marks no "
                         "step as a clean expert's (`simdist generate` or `simdist dagger` data)")  # fmt: skip
    if cfg.value_weight and "value" not in sampler.dataset.fields:
        raise ValueError(f"value_weight={cfg.value_weight} needs a value label per step, but "
                         f"{sampler.dataset.path} stores none (simulation data from `simdist generate` or "
                         "`simdist value relabel`)")  # fmt: skip
    replayed = (WindowSampler(replay, sampler.spec, sampler.horizon, n_replay, cfg.seed + 2, sampler.device)
                if n_replay else None)  # fmt: skip
    if holdout is None:
        train, hold = recent_split(sampler, cfg.holdout_fraction)
        holdout = fixed_batches(hold, cfg.holdout_windows, cfg.batch_size, cfg.seed)
        n_hold = int(hold.starts.size)
    else:
        train, n_hold = sampler, sum(int(b["actions"].shape[0]) for b in holdout)
    if cfg.recent_steps:
        train = train.recent(cfg.recent_steps)
    new = copy.deepcopy(model)
    anchor = None
    if cfg.anchor_weight:
        reference = model if anchor_to is None else anchor_to
        start_steps = max(1, round(cfg.anchor_start_s * model.spec.control_hz)) if cfg.anchor_start_s else None
        anchor = ActionEffectAnchor(reference, weight=cfg.anchor_weight, noise_std=cfg.anchor_noise_std,
                                    seed=cfg.seed + 3, start_steps=start_steps)  # fmt: skip
    trainer = DynamicsFinetuner(new, optim=cfg.optim, total_steps=cfg.steps, parts=cfg.trainable_parts,
                                weights=cfg.loss_weights, regularizer=anchor)  # fmt: skip
    history = []
    steps = range(cfg.steps)
    if progress:
        from tqdm import tqdm

        steps = tqdm(steps, desc="finetune", unit="step")
    for _ in steps:
        batch = train.sample() if replayed is None else concat_batches(train.sample(), replayed.sample())
        history.append(trainer.update(batch))
        if after_update is not None:
            after_update()
    for p in new.parameters():  # leave the returned model in a plain inference state
        p.requires_grad_(False)
    new.eval()
    gate = validation_gate(model, new, holdout, cfg.min_improvement, pace=after_update, weights=cfg.loss_weights)
    log.info("finetune %s: %s", cfg.parts, gate.reason)
    report = FinetuneReport(
        steps=cfg.steps, parts=cfg.parts, train_loss_first=history[0]["loss"], train_loss_last=history[-1]["loss"],
        gate=gate, n_train_windows=int(train.starts.size), n_holdout_windows=n_hold,
        wall_s=time.perf_counter() - start, history=history, replay_per_batch=n_replay,
        anchor_first=history[0].get("anchor"), anchor_last=history[-1].get("anchor"),
    )  # fmt: skip
    return new, report
