"""Training windows from the step store: the ``WindowBatch`` contract (see the project brief).

A stored row ``r`` holds the observation ``o_r``, the action executed after it ``a_r``, the reward
``r_r`` received for it and the expert value ``V(s_r)``. ``simdist generate`` also stores the
episode's final observation as a last row (action zeros, ``clean_expert`` False), so the final
transition has a target; stores that lack it (the ROS replay buffer) simply lose that transition.

For a start row ``t`` with ``e`` = its episode's last row, a ``WindowBatch`` holds::

    obs[k]          model input at time cur_k = min(t + k, e), k = 0..H (rows past e repeat e; masked)
      proprio       (B, H+1, T, P) float32  rows cur_k-T+1 .. cur_k; rows before the episode start
                                            repeat its first row (ObservationHistory.reset)
      prev_actions  (B, H+1, T, A) float32  action of row r-1 for each history row r; zeros where
                                            r-1 is before the episode start
      command       (B, H+1, C)    float32  [if C > 0]
      height_map    (B, H+1, Hm, Wm) float32  [Go2]
      image         (B, H+1, 3, h, w) uint8   [UR5e] (stored HWC, returned CHW)
    actions         (B, H, A) float32  a_{t+k}          (zeros where t+k > e)
    rewards         (B, H)    float32  r_{t+k}          (zeros where t+k > e)
    values          (B, H)    float32  V(s_{t+k+1})     (zeros where invalid)
    clean_expert    (B, H)    bool     the row's imitation target is a clean expert action (False where t+k > e)
    bc_actions      (B, H, A) float32  imitation target of the policy prior at t+k: the stored ``expert_action``
                                       where a store has one (expert-labelled learner rollouts,
                                       ``simdist_core.data.dagger``), else ``actions``
    valid           (B, H)    bool     t+k+1 <= e: the transition t+k -> t+k+1 is in the episode
    probe           (B, H+1, 3) float32  privileged probe at cur_k
    episode_step    (B,)      int64    t minus its episode's first row: how many control steps into its
                                       episode the window starts (0 at a reset)

Start rows are drawn uniformly among rows with at least one valid transition (``t < e``).
Optional fields missing from a store (``reward``, ``value``, ``clean_expert``, ``priv/probe``)
come back as zeros / False and are listed in ``WindowSampler.missing``; a store without ``expert_action``
gives ``bc_actions`` equal to ``actions``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from simdist_core.data.dataset import Dataset
from simdist_core.robots import RobotSpec

OPTIONAL_FIELDS = ("reward", "value", "clean_expert", "priv/probe")
EXPERT_ACTION = "expert_action"
"""Field of a store whose executed actions are not the expert's, holding the expert's label of each state."""


class WindowSampler:
    """Random ``WindowBatch`` dicts from a ``Dataset``, vectorised over the batch.

    Args:
        dataset: the step store.
        spec: robot layout (history length T, action/command/image dims).
        horizon: H, future steps per window (default ``spec.horizon``).
        batch_size: B.
        seed: seed of the start-row generator.
        device: torch device of the returned tensors.
        starts: restrict start rows to these global rows (used by ``split`` / ``recent``).
        resident: copy every field a window reads onto ``device`` once and gather windows there. On a
            GPU this removes the CPU gather that bounds image training (26 frames x B images per
            batch); it costs the fields' size in device memory (~12 KB per UR5e row). Views made by
            ``split`` / ``recent`` share the copy. Batches are identical either way.

    Raises:
        KeyError: a required field (``obs/proprio``, ``action``, ``episode_id`` or a per-robot obs) is absent.
        ValueError: no row has a valid transition, or a bad argument.
    """

    def __init__(
        self,
        dataset: Dataset,
        spec: RobotSpec,
        horizon: int | None = None,
        batch_size: int = 256,
        seed: int = 0,
        device: torch.device | str = "cpu",
        *,
        starts: np.ndarray | None = None,
        resident: bool = False,
    ) -> None:
        self.dataset, self.spec = dataset, spec
        self.horizon = spec.horizon if horizon is None else int(horizon)
        if self.horizon < 1 or batch_size < 1:
            raise ValueError(f"horizon and batch_size must be >= 1, got {self.horizon=}, {batch_size=}")
        self.batch_size, self.seed, self.device = batch_size, seed, torch.device(device)
        self._rng = np.random.default_rng(seed)
        required = ["obs/proprio", "action"]
        required += ["obs/command"] if spec.command_dim else []
        required += ["obs/height_map"] if spec.height_map_shape else []
        required += ["obs/image"] if spec.image_shape else []
        for name in required:
            if name not in dataset.fields:
                have = sorted(dataset.fields)
                raise KeyError(f"dataset {dataset.path} lacks field {name!r} needed for {spec.name}; has {have}")
        stored = dataset.fields["obs/proprio"].shape
        if stored != (spec.proprio_dim,):
            raise ValueError(f"obs/proprio is {stored} per step, {spec.name} needs ({spec.proprio_dim},)")
        self.missing = tuple(f for f in OPTIONAL_FIELDS if f not in dataset.fields)
        """Optional fields absent from the store (returned as zeros / False)."""
        ends = dataset.episode_ends[dataset.row_episode]  # (N,) one past the episode's last row
        eligible = np.flatnonzero(np.arange(dataset.n_steps) + 1 < ends)
        if starts is not None:
            eligible = np.intersect1d(eligible, np.asarray(starts, np.int64))
        if eligible.size == 0:
            raise ValueError(f"no start row with a valid transition in {dataset.path} (episodes of one row only?)")
        self.starts = eligible
        """(S,) global rows a window may start at."""
        self._resident: dict[str, torch.Tensor] | None = None
        if resident:
            fields = [*required, *(f for f in OPTIONAL_FIELDS if f not in self.missing)]
            fields += [EXPERT_ACTION] if EXPERT_ACTION in dataset.fields else []
            self._resident = {f: torch.from_numpy(np.ascontiguousarray(dataset.array(f))).to(self.device)
                              for f in fields}  # fmt: skip

    # -- views ----------------------------------------------------------------------------------

    def view(self, starts: np.ndarray, seed: int) -> WindowSampler:
        """A sampler over the same store restricted to ``starts`` (global rows), with its own seed."""
        view = WindowSampler(self.dataset, self.spec, self.horizon, self.batch_size, seed, self.device, starts=starts)
        view._resident = self._resident  # share the device copy, never make a second one
        return view

    def split(self, holdout_fraction: float, seed: int | None = None) -> tuple[WindowSampler, WindowSampler]:
        """(train, holdout) samplers over disjoint episodes.

        ``round(E * holdout_fraction)`` episodes (at least one) are held out. A store with a single
        episode (a replay buffer) is split in time instead: the last fraction of its rows is held
        out and training windows stop H rows before it, so no target leaks across.

        Raises:
            ValueError: fraction outside (0, 1).
        """
        if not 0.0 < holdout_fraction < 1.0:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {holdout_fraction=}")
        seed = self.seed if seed is None else seed
        ds = self.dataset
        episodes = np.unique(ds.row_episode[self.starts])
        if episodes.size >= 2:
            n_hold = min(max(1, round(episodes.size * holdout_fraction)), episodes.size - 1)
            held = np.random.default_rng(seed).permutation(episodes)[:n_hold]
            is_held = np.isin(ds.row_episode[self.starts], held)
            train, hold = self.starts[~is_held], self.starts[is_held]
        else:
            cut = self.starts[int(len(self.starts) * (1.0 - holdout_fraction))]
            train, hold = self.starts[self.starts < cut - self.horizon], self.starts[self.starts >= cut]
        return self.view(train, seed), self.view(hold, seed + 1)

    def recent(self, k_steps: int) -> WindowSampler:
        """A sampler whose windows start only within the newest ``k_steps`` stored steps."""
        return self.view(np.intersect1d(self.starts, self.dataset.recent_rows(k_steps)), self.seed)

    # -- resume -------------------------------------------------------------------------------

    def rng_state(self) -> dict:
        """The start-row generator's state (JSON-ready), so a resumed run draws the batches it would have drawn."""
        return self._rng.bit_generator.state

    def set_rng_state(self, state: dict) -> None:
        """Restore what ``rng_state`` returned.

        Raises:
            ValueError: ``state`` is not a state of this sampler's bit generator.
        """
        kind = type(self._rng.bit_generator).__name__
        if not isinstance(state, dict) or state.get("bit_generator") != kind:
            raise ValueError(f"sampler state is not a {kind} state: {str(state)[:80]}")
        self._rng.bit_generator.state = state

    # -- sampling -------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict]:
        while True:
            yield self.sample()

    def sample(self, starts: np.ndarray | None = None) -> dict:
        """One ``WindowBatch`` (layout in the module docstring).

        Args:
            starts: (B,) explicit start rows (for tests and deterministic evaluation); default
                ``batch_size`` rows drawn uniformly from ``self.starts``.
        """
        ds, spec = self.dataset, self.spec
        t = self._rng.choice(self.starts, self.batch_size) if starts is None else np.asarray(starts, np.int64)
        T, H, B = spec.history, self.horizon, len(t)  # noqa: N806  (shape letters)
        # Indices and masks are computed on the host (a few thousand ints); gathers run where the data is.
        ep = ds.row_episode[t]
        first, last = ds.episode_starts[ep][:, None], ds.episode_ends[ep][:, None] - 1  # (B, 1)
        # Span of rows t-T .. t+H (the extra left row gives the action before the oldest history row).
        span = t[:, None] + np.arange(-T, H + 1)[None]  # (B, T+H+1)
        span_rows = np.clip(span, first, last)
        k = np.arange(H + 1)
        m = np.minimum(k[None], last - t[:, None])  # (B, H+1) steps past the episode end repeat e
        window = m[:, :, None] + 1 + np.arange(T)[None, None]  # (B, H+1, T) span index of each history row
        cur = t[:, None] + m  # (B, H+1)
        step = span[:, T : T + H]  # (B, H) rows t .. t+H-1
        in_episode, valid = step <= last, step + 1 <= last
        host = self._host_to_work
        proprio_span = self._gather("obs/proprio", span_rows).float()  # (B, T+H+1, P)
        action_span = self._gather("action", span_rows).float()  # (B, T+H+1, A), a fresh copy
        action_span[host(span > last)] = 0.0  # no action exists past the episode's last row
        has_prev = host((span - 1 >= first)[..., None])
        prev = torch.where(has_prev, torch.roll(action_span, 1, dims=1), 0.0)  # (B, T+H+1, A)
        b, w = host(np.arange(B)[:, None, None]), host(window)
        obs = {
            "proprio": proprio_span[b, w],  # (B, H+1, T, P)
            "prev_actions": prev[b, w],  # (B, H+1, T, A)
        }
        if spec.command_dim:
            obs["command"] = self._gather("obs/command", cur).float()  # (B, H+1, C)
        if spec.height_map_shape:
            obs["height_map"] = self._gather("obs/height_map", cur).float()  # (B, H+1, Hm, Wm)
        if spec.image_shape:
            obs["image"] = self._gather("obs/image", cur).permute(0, 1, 4, 2, 3).contiguous()  # (B, H+1, 3, h, w)
        actions = action_span[:, T : T + H].contiguous()
        if EXPERT_ACTION in ds.fields:
            bc_actions = self._gather(EXPERT_ACTION, span_rows[:, T : T + H]).float()
            bc_actions[host(~in_episode)] = 0.0
        else:
            bc_actions = actions
        batch = {
            "obs": obs,
            "actions": actions,
            "bc_actions": bc_actions,
            "rewards": self._optional("reward", span_rows[:, T : T + H], in_episode, torch.float32),
            "values": self._optional("value", span_rows[:, T + 1 : T + H + 1], valid, torch.float32),
            "clean_expert": self._optional("clean_expert", span_rows[:, T : T + H], in_episode, torch.bool),
            "valid": host(valid),
            "probe": self._probe(cur),
            "episode_step": host(t - first[:, 0]),
        }
        return self._to_device(batch)

    @property
    def _work_device(self) -> torch.device:
        """Where gathers and masking run: the device for a resident store, else the host."""
        return self.device if self._resident is not None else torch.device("cpu")

    def _host_to_work(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(self._work_device)

    def _gather(self, field: str, rows: np.ndarray) -> torch.Tensor:
        """``field`` at global ``rows`` (any int shape S) -> (*S, *field_shape), a new tensor on the work device."""
        if self._resident is None:
            return torch.from_numpy(self.dataset.gather(field, rows))
        return self._resident[field][self._host_to_work(rows.astype(np.int64, copy=False))]

    def _optional(self, field: str, rows: np.ndarray, mask: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
        if field in self.missing:
            return torch.zeros(rows.shape, dtype=dtype, device=self._work_device)
        values = self._gather(field, rows).reshape(rows.shape).to(dtype)
        return torch.where(self._host_to_work(mask), values, torch.zeros((), dtype=dtype, device=values.device))

    def _probe(self, cur: np.ndarray) -> torch.Tensor:
        if "priv/probe" in self.missing:
            return torch.zeros((*cur.shape, 3), dtype=torch.float32, device=self._work_device)
        return self._gather("priv/probe", cur).float()  # (B, H+1, 3)

    def _to_device(self, tree: dict) -> dict:
        return {key: self._to_device(value) if isinstance(value, dict) else value.to(self.device)
                for key, value in tree.items()}  # fmt: skip


def fit_normalizer_stats(dataset: Dataset, max_rows: int = 200_000, seed: int = 0, min_std: float = 1e-2) -> dict:
    """Normalisation statistics for the world model, from up to ``max_rows`` random rows.

    Returns:
        dict of float32 numpy arrays:
        ``proprio_mean`` (P,), ``proprio_std`` (P,) (floored at ``min_std``);
        ``reward_mean`` (1,), ``reward_scale`` (1,) = std of the stored reward;
        ``value_mean`` (1,), ``value_scale`` (1,) = std of the stored expert value
        (mean 0 / scale 1 when the field is absent); and, for Go2 stores,
        ``height_map_mean`` (1,), ``height_map_std`` (1,) over all cells.
        Normalised target = (x - mean) / scale.
    """
    n = dataset.n_steps
    rows = np.arange(n) if n <= max_rows else np.sort(np.random.default_rng(seed).choice(n, max_rows, replace=False))
    out = {}

    def stats(field: str, prefix: str, scale_key: str, per_column: bool) -> None:
        if field not in dataset.fields:
            out[f"{prefix}_mean"], out[f"{prefix}_{scale_key}"] = np.zeros(1, np.float32), np.ones(1, np.float32)
            return
        x = dataset.gather(field, rows).astype(np.float64).reshape(len(rows), -1)
        x = x if per_column else x.reshape(-1, 1)
        out[f"{prefix}_mean"] = x.mean(0).astype(np.float32)
        out[f"{prefix}_{scale_key}"] = np.maximum(x.std(0), min_std).astype(np.float32)

    stats("obs/proprio", "proprio", "std", True)
    stats("reward", "reward", "scale", False)
    stats("value", "value", "scale", False)
    if "obs/height_map" in dataset.fields:
        stats("obs/height_map", "height_map", "std", False)
    return out


def concat_batches(first: dict, second: dict) -> dict:
    """One batch of ``first``'s rows then ``second``'s (same keys; nested dicts joined key by key)."""
    if first.keys() != second.keys():
        raise ValueError(f"batches differ in keys: {sorted(first)} vs {sorted(second)}")
    return {key: concat_batches(value, second[key]) if isinstance(value, dict) else torch.cat([value, second[key]])
            for key, value in first.items()}  # fmt: skip
