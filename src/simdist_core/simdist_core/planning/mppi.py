"""MPPI planning in the latent space of a world model (TD-MPC2's ``_plan``, batch-first, multi-step).

Every iteration rolls out all candidates at once through the dynamics (one forward pass for the
transformer), scores them with discounted reward plus terminal value, and refits a Gaussian to the
softmax-weighted elites. The first action of the final mean is executed; the whole mean, shifted
by one step, warm-starts the next tick until ``reset()``.

Differences from TD-MPC2's ``_plan``, each for the CPU budget or for safety: policy-prior candidates and the
warm-start mean are rolled out once per tick and stay in every iteration's elite pool (deterministic, so
re-rolling them would waste the budget); the executed action is the mean's first action (not a sampled
elite); non-finite returns are excluded and, if nothing finite is left, the planner holds (zero action).
Optionally (``prior_weight`` > 0) every candidate's return is penalised by its distance from the policy
prior's plan, so the search stays where the model is accurate (see ``PlannerConfig.prior_weight``).
Candidates share one context: ``layers.Attention`` projects its keys/values once instead of N times,
which measured 21-25 % less CPU time for dynamics + reward + value at N = 40 and N = 472.

The planner only calls this interface of the model (``WorldModel`` has it; tests use an analytic
stand-in): ``spec.action_dim``, ``spec.horizon``, ``encode(obs)``, ``predict(latent, actions)``,
``reward(latent, zs, actions)``, ``value(latent, zs)``, ``pi(latent)``, ``decode_probe(z)``.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from simdist_core.models.world_model import Latent

log = logging.getLogger(__name__)


REFERENCE_RETURNS = ("", "min", "mean")
"""``PlannerConfig.reference_returns``: off, the lower of the two returns, their mean."""


@dataclass(frozen=True, kw_only=True)
class PlannerConfig:
    """MPPI settings; see ``PRESETS`` for the reference and CPU budgets."""

    horizon: int = 25
    """H: planned steps (<= the model's horizon)."""
    num_samples: int = 450
    """Gaussian candidates per iteration."""
    num_pi_samples: int = 22
    """Policy-prior candidates (rolled out once per tick, kept in every iteration's elite pool)."""
    iterations: int = 8
    """MPPI refits per tick."""
    num_elites: int = 64
    """Candidates the Gaussian is refitted to."""
    temperature: float = 0.25
    """Elite weights are softmax(temperature * (G - max G)), G = return in task units (TD-MPC2's convention:
    a larger temperature is greedier)."""
    max_std: float = 2.0
    """Initial (and largest) sampling std per tick."""
    min_std: float = 0.05
    """Smallest sampling std after a refit."""
    discount: float = 0.99
    """Per-step discount of rewards and of the terminal value."""
    pi_noise_std: float = 0.1
    """Noise added to all but the first policy-prior candidate."""
    terminal_value: bool = True
    """Add discount**H * V(z_H) to each candidate's return."""
    terminal_value_cap: bool = False
    """Cap each candidate's terminal value at the value of the policy prior's noise-free plan's end state this tick:
    the value can rank a plan below the prior's, never above it. Why: a search scores end states its model
    predicts, and a value head fitted to the states the data visited is optimistic about predicted states it never
    saw; measured on the UR5e, any terminal value cost the searching planner insertions even in distribution, the
    better-fitted head more (docs/results/value.md). Capped, the value can still veto plans that end worse than the
    prior's, which is where its training data (perturbed, failing rollouts) taught it most. Needs
    ``terminal_value`` and ``num_pi_samples`` >= 1 (the noise-free prior plan is the first prior candidate)."""
    prior_weight: float = 0.0
    """lambda, task-return units: candidates are ranked by G(a) - lambda * mean_t ||a_t - pi_t||^2, pi = the policy
    prior's noise-free plan this tick (squared norm over action dims, mean over the H steps, undiscounted). Applies
    to every candidate (Gaussian, prior and warm start). Why: refits chase what the world model scores highly,
    and away from its training data it is wrong (on Go2 any second MPPI iteration falls every episode, see
    docs/results/planner_latency.md, "What samples buy"); the prior was distilled from the expert's data, so
    staying near its plan keeps the search where the model was trained. 0 (default) is the plain MPPI objective,
    bit for bit."""
    prior_after_committed: bool = False
    """With ``committed`` actions (a delay planned around): the policy prior proposes from the latent the model
    predicts after them, and its plan follows them, instead of proposing from the observed latent (whose steps
    after the committed ones assume its own first actions, not the ones really in flight). Why: at a tight
    ``prior_weight`` the plan is the prior's, and the command sent is its step d; measured on the UR5e, compensating
    a delay with the observed-state prior halved insertions (``bench_results/UR5E_LATENCY_COMPENSATION.md``).
    Measured with it (``bench_results/UR5E_LATENCY_PRIOR_AFTER.md``): the shipped UR5e model's predicted latents
    lead its prior astray (no insertion), models finetuned on the shifted robot's data insert 0.51 / 0.14, still
    below the deployed planner without compensation; off by default. Costs one more model rollout of d steps and
    one prior call per tick that has committed actions."""
    reference_returns: str = ""
    """Also score each candidate with the reference dynamics (the model the planner was built with, before any hot
    swap; ``MPPIPlanner(reference=...)`` names another) and rank it by ``"min"``, the lower of the two returns, or
    ``"mean"``, their mean; ``""`` (default): the running model's return alone. Why: dynamics-only finetuning
    teaches the dynamics the states the robot lived and may forget what it knew where the robot spent little time
    (on the PTFE slope, the start from rest); the two models are then a two-member ensemble of which the planner
    takes the pessimistic or the average view. Only for models that differ from the reference in their dynamics
    alone (their latents and heads are the same); until a model has been swapped in, plans are those of the plain
    objective, bit for bit. Costs one more rollout of every candidate once a finetuned model runs (PTFE slope, ``cpu``
    preset, one thread: 13 ms at the median instead of 7-8), and each hot swap compares the new model's weights
    outside the dynamics with the reference's (2.5-3.5 ms for the shipped Go2 model, in the tick that swaps).
    Measured on the PTFE slope (``bench_results/GO2_CSR_PTFE_REFERENCE_MEAN.md``): ``mean`` not shown to help the
    finetuned models (+0.314 m [-0.049, 0.718] on 60 new episodes), ``min`` no different; on the UR5e's milder
    stand-in at tie 200 (``bench_results/UR5E_REFERENCE_MIN.md``) ``min`` +0.067 [-0.039, 0.167] over the adapted
    models alone (not shown), +0.144 [0.039, 0.25] over the deployed planner's zero-shot. Off by default."""

    def __post_init__(self) -> None:
        for name in ("horizon", "iterations", "num_elites"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {name}={getattr(self, name)}")
        for name in ("num_samples", "num_pi_samples"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {name}={getattr(self, name)}")
        if self.num_elites > self.num_samples + self.num_pi_samples:
            raise ValueError(
                f"num_elites must be <= num_samples + num_pi_samples, got {self.num_elites=}, "
                f"{self.num_samples=}, {self.num_pi_samples=}"
            )
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got temperature={self.temperature}")
        if not 0 < self.min_std <= self.max_std:
            raise ValueError(f"need 0 < min_std <= max_std, got {self.min_std=}, {self.max_std=}")
        if not 0 < self.discount <= 1:
            raise ValueError(f"discount must be in (0, 1], got discount={self.discount}")
        if self.pi_noise_std < 0:
            raise ValueError(f"pi_noise_std must be >= 0, got pi_noise_std={self.pi_noise_std}")
        if not self.prior_weight >= 0:  # also refuses nan
            raise ValueError(f"prior_weight must be >= 0, got prior_weight={self.prior_weight}")
        if self.reference_returns not in REFERENCE_RETURNS:
            raise ValueError(f"reference_returns must be one of {REFERENCE_RETURNS}, got {self.reference_returns!r}")
        if self.terminal_value_cap and not (self.terminal_value and self.num_pi_samples >= 1):
            raise ValueError("terminal_value_cap needs terminal_value=True and num_pi_samples >= 1, got "
                             f"{self.terminal_value=}, {self.num_pi_samples=}")


PRESETS: dict[str, PlannerConfig] = {
    # The authors' Go2 budget: 472 candidates x 8 iterations = 3,776 rollouts per tick (GPU, 50 Hz).
    "reference": PlannerConfig(),
    # The largest budget that held p99 <= 20 ms per tick at H 25 with the reference-size model on the project's
    # 2-core AMD EPYC, torch threads = 1, machine otherwise idle (load 0.4): 8 prior + 1 warm-start + 32 Gaussian
    # rollouts, p50 15.7 ms, p99 16.8 ms (`simdist bench planner --preset cpu`). 16 + 8 x 2 iterations measured
    # p50 17.1 / p99 24 ms, 48 + 16 x 1 p50 26 ms. Two threads were no faster once other processes ran (p99 > 0.2 s).
    # One iteration, so the Gaussian samples search close to the warm start (max_std 0.5: with std 2 and a single
    # refit, clipped samples are mostly bang-bang); the policy prior supplies the rest.
    "cpu": PlannerConfig(num_samples=32, num_pi_samples=8, iterations=1, num_elites=8, max_std=0.5),
    # No Gaussian search: each tick the model scores the policy prior's plan against last tick's (warm-start)
    # plan and executes the better one. For contact-rich tasks whose model has not lived contact yet: MPPI
    # samples that press hard are scored as going deeper (the UR5e model drags the peg off the fixture, see
    # checkpoints/README.md), and this keeps the prior's millimetre precision.
    "prior": PlannerConfig(num_samples=0, num_pi_samples=1, iterations=1, num_elites=1),
}


def planner_preset(name: str, **overrides: object) -> PlannerConfig:
    """A preset by name, optionally with field overrides.

    Raises:
        KeyError: unknown preset; the message lists the valid names.
    """
    try:
        base = PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown planner preset {name!r}; valid: {sorted(PRESETS)}") from None
    return dataclasses.replace(base, **overrides)  # type: ignore[arg-type]


@dataclass(frozen=True)
class PlanResult:
    """One tick's plan; numpy arrays, safe to publish."""

    action: np.ndarray
    """(A,) float32 in [-1, 1]: the action to execute now (zeros = default pose/hold on fallback)."""
    mean: np.ndarray
    """(H, A) the final MPPI mean."""
    latents: np.ndarray | None
    """(H, D) predicted latents of the mean (zeros on fallback; None if planned with ``predict_mean=False``)."""
    probe: np.ndarray | None
    """(H, 3) decoded probe of those latents, for visualisation (zeros on fallback; None as ``latents``)."""
    value: float
    """Predicted return of the mean (task units, without the ``prior_weight`` penalty); nan on fallback and
    with ``predict_mean=False``."""
    fallback: str | None = None
    """Why the safe action was used instead of a plan, or None."""
    num_nonfinite: int = 0
    """Candidates dropped because the model scored them non-finite."""


def planner_config_from(stored: Mapping[str, object] | None, preset: str,
                        overrides: Mapping[str, str] | None = None) -> PlannerConfig:  # fmt: skip
    """The config of a preset plus ``key=value`` overrides.

    ``preset``: a ``PRESETS`` name, ``"checkpoint"`` (``stored``, the config a checkpoint keeps beside its weights)
    or ``"auto"`` (``stored`` if there is one, else ``"cpu"``).

    Raises:
        KeyError: an unknown preset (lists the valid ones), or ``"checkpoint"`` with no stored config.
        ValueError: a bad override.
    """
    from simdist_core.config import apply_overrides, from_dict

    if preset == "auto":
        preset = "checkpoint" if isinstance(stored, Mapping) else "cpu"
    if preset == "checkpoint":
        if not isinstance(stored, Mapping):
            raise KeyError("preset checkpoint, but the checkpoint stores no planner config; use cpu or reference")
        cfg = from_dict(PlannerConfig, dict(stored))
    else:
        cfg = planner_preset(preset)
    return apply_overrides(cfg, overrides) if overrides else cfg


def check_same_but_dynamics(reference: nn.Module, model: nn.Module) -> None:
    """Raise unless ``model`` equals ``reference`` in every weight and buffer outside its dynamics.

    ``reference_returns`` scores the same latent (``model``'s encoder) with both dynamics and their heads: that
    means something only when the encoder and heads are the ones the reference's dynamics were trained with.

    Raises:
        ValueError: a weight outside the dynamics differs, or the two models do not have the same weights.
    """
    ref, new = reference.state_dict(), model.state_dict()
    if ref.keys() != new.keys():
        raise ValueError("reference_returns: the model and the reference have different weights")
    changed = [k for k in ref if not k.startswith("dynamics.")
               and (ref[k].shape != new[k].shape or not torch.equal(ref[k].cpu(), new[k].cpu()))]  # fmt: skip
    if changed:
        raise ValueError(f"reference_returns needs a model that differs from the reference in its dynamics only; "
                         f"{len(changed)} other tensors differ (first: {changed[0]})")


def episode_noise_seed(seed: int, episode_key: int) -> int:
    """A sampling-noise seed for one episode of a planner seeded ``seed``: independent streams per key.

    ``episode_key`` is any non-negative integer that tells the episode apart (an index, a checksum of its first
    latent).
    """
    return int(np.random.SeedSequence([seed, episode_key]).generate_state(1, np.uint64)[0] >> 1)


class MPPIPlanner:
    """Batched MPPI over a world model, device-agnostic, seeded, warm-started."""

    def __init__(self, model: nn.Module, cfg: PlannerConfig | None = None, device: torch.device | str = "cpu",
                 seed: int = 0, *, reference: nn.Module | None = None) -> None:  # fmt: skip
        """A planner of ``model``; ``reference`` is the model ``reference_returns`` also scores plans with.

        ``reference`` defaults to ``model``: the one the planner starts with, kept across hot swaps.

        Raises:
            ValueError: ``reference`` differs from ``model`` in more than its dynamics (``reference_returns``).
        """
        self.cfg = cfg or PlannerConfig()
        self.device = torch.device(device)
        self.seed = seed
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.model = self._prepare(model)
        if reference is not None:
            self.reference = self._prepare(reference)
        else:  # a copy of its own: the planner node loads later updates into the retired model's memory
            self.reference = self._prepare(copy.deepcopy(model)) if self.cfg.reference_returns else self.model
        self._reference_differs = reference is not None
        """Whether the running model may differ from the reference (a reference was given, or a model swapped in);
        until then ``reference_returns`` skips the second rollout, which would score the same."""
        if self.cfg.reference_returns:
            check_same_but_dynamics(self.reference, self.model)
        self._discounts = self.cfg.discount ** torch.arange(self.cfg.horizon, device=self.device, dtype=torch.float32)
        self._prev_mean: torch.Tensor | None = None
        self._last_latent: Latent | None = None
        """The latent the last plan (``_prev_mean``) was made from, for ``predict_last_mean``."""
        self._last_pool: tuple[torch.Tensor, torch.Tensor] | None = None
        """(returns (N,), predicted latents (N, H, D)) of the last plan's final iteration, for ``sampled_rollouts``."""
        self._last_value_cap: torch.Tensor | None = None
        """The terminal-value cap of the last plan (``terminal_value_cap``), for ``predict_last_mean``."""

    def _prepare(self, model: nn.Module) -> nn.Module:
        if model.spec.horizon < self.cfg.horizon:
            raise ValueError(f"planner horizon {self.cfg.horizon} exceeds the model's horizon {model.spec.horizon}")
        return model.to(self.device).eval()

    def reset(self, *, noise_seed: int | None = None) -> None:
        """Forget the warm start (new episode, after a fallback, or after e-stop).

        ``noise_seed``: also restart the sampling noise from this seed, so what follows does not depend on how many
        plans came before. Give each episode a seed of its own (:func:`episode_noise_seed`): one seed for every
        episode would make all episodes share one draw of noise.
        """
        if noise_seed is not None:
            self.generator.manual_seed(noise_seed)
        self._prev_mean = None
        self._last_latent = None
        self._last_pool = None
        self._last_value_cap = None

    def swap_model(self, new_model: nn.Module) -> None:
        """Replace the model between ticks (hot swap); keeps the warm start. Same robot layout required.

        Raises:
            ValueError: the new model's action dimension or horizon does not fit this planner.
        """
        if new_model.spec.action_dim != self.model.spec.action_dim:
            raise ValueError(
                f"swap_model: action_dim {new_model.spec.action_dim} != current {self.model.spec.action_dim}"
            )
        if self.cfg.reference_returns:
            check_same_but_dynamics(self.reference, new_model)
        self.model = self._prepare(new_model)
        self._reference_differs = True

    def set_num_samples(self, n: int) -> int:
        """Change the Gaussian sample count between ticks (a compute budget, ``deadline.SampleBudget``).

        The warm start and the policy-prior candidates are kept. Clamped from below so the elites still fit
        (``num_elites <= num_samples + num_pi_samples``); returns the count now in use.
        """
        n = max(int(n), self.min_num_samples)
        if n != self.cfg.num_samples:
            self.cfg = dataclasses.replace(self.cfg, num_samples=n)
        return n

    @property
    def min_num_samples(self) -> int:
        """The fewest Gaussian samples this config allows (elites must fit into the candidate pool)."""
        return max(0, self.cfg.num_elites - self.cfg.num_pi_samples)

    def plan(self, obs: dict[str, torch.Tensor], committed: np.ndarray | None = None, *,
             predict_mean: bool = True) -> PlanResult:  # fmt: skip
        """Encode a batch-of-one model input (validated by ``encode``) and plan from it (see ``plan_latent``)."""
        with torch.inference_mode():
            latent = self.model.encode({k: v.to(self.device) for k, v in obs.items()})
        return self.plan_latent(latent, committed, predict_mean=predict_mean)

    @torch.inference_mode()
    def plan_latent(self, latent: Latent, committed: np.ndarray | None = None, *,
                    predict_mean: bool = True) -> PlanResult:  # fmt: skip
        """Plan from a latent (batch 1: z (1, D), context (1, S, W)) and return the action to execute.

        ``predict_mean``: also roll out the final mean for ``latents``, ``probe`` and ``value`` (one more model
        call). The action, the mean and the random stream are the same either way; a control loop that needs
        the prediction only to draw it passes False and calls ``predict_last_mean`` after its command is out:
        with the shipped Go2 model on a 2-core VM the extra rollout is ~3 of ~20 ms per tick.

        ``committed`` (d, A): actions already sent that will act on the d steps from the observed state on,
        before this plan's action can (a pipeline delay of d control periods). Every candidate starts with them,
        so the search optimises what follows them and the returned action is the plan's step d: the model
        predicts the state the action will really meet instead of the stale one it was planned from.
        None or d = 0: no delay, step 0 (as the in-process evaluation).

        Raises:
            ValueError: ``committed`` is not (d, A) with d < horizon, or is non-finite.
        """
        cfg, a_dim = self.cfg, self.model.spec.action_dim
        fixed = self._committed(committed)
        d = fixed.shape[0]
        latent = Latent(latent.z[:1].to(self.device), latent.context[:1].to(self.device))
        if not (torch.isfinite(latent.z).all() and torch.isfinite(latent.context).all()):
            return self._fallback("non-finite latent from the encoder")

        mean = torch.zeros(cfg.horizon, a_dim, device=self.device)
        if self._prev_mean is not None:
            mean[:-1] = self._prev_mean[1:]  # warm start: last tick's mean, shifted one step (last step repeated)
            mean[-1] = self._prev_mean[-1]
        mean[:d] = fixed
        std = torch.full_like(mean, cfg.max_std)
        # Sample (once per tick): policy-prior candidates and the warm-start mean itself, so a good plan from
        # the last tick is never lost to sampling noise; their returns are reused by every iteration.
        # The prior's noise-free plan is computed once: it centres the prior candidates and the prior penalty.
        pi = self._prior_plan(latent, fixed) if cfg.num_pi_samples or cfg.prior_weight else None
        prior = torch.cat([self._prior_candidates(pi), mean[None]])  # (Np + 1, H, A)
        prior[:, :d] = fixed
        n_prior = prior.shape[0]
        prior_returns: torch.Tensor | None = None
        value_cap: torch.Tensor | None = None
        dropped = 0
        for _ in range(cfg.iterations):
            # Sample: Gaussian candidates around the current mean, clipped to the action bounds.
            noise = torch.randn(cfg.num_samples, *mean.shape, device=self.device, generator=self.generator)
            candidates = torch.cat([prior, (mean + std * noise).clamp(-1.0, 1.0)])  # (N, H, A)
            candidates[:, :d] = fixed
            # Roll out and score; non-finite returns can never be elites. The first iteration rolls the prior
            # candidates out in the same pass as its Gaussian ones (one model call's fixed cost instead of two:
            # 14.0 -> 11.2 ms for 9 + 32 candidates with the shipped Go2 model on a 2-core VM); later iterations
            # reuse their returns.
            if prior_returns is None:
                pool_zs = self.model.predict(latent, candidates)
                if cfg.terminal_value_cap:  # candidate 0 is the prior's noise-free plan (after ``fixed``)
                    value_cap = self._terminal_values(latent, pool_zs[:1])[0]
                returns = self._objective(self._returns(latent, candidates, pool_zs, value_cap), candidates, pi)
                prior_returns, prior_zs = returns[:n_prior], pool_zs[:n_prior]
            else:
                sampled = candidates[n_prior:]
                sampled_returns, sampled_zs = self._rollout(latent, sampled, value_cap)
                returns = torch.cat([prior_returns, self._objective(sampled_returns, sampled, pi)])  # (N,)
                pool_zs = prior_zs if sampled_zs is None else torch.cat([prior_zs, sampled_zs])
            finite = torch.isfinite(returns)
            dropped = int((~finite).sum())
            if not finite.any():
                return self._fallback(f"all {returns.numel()} candidate returns are non-finite")
            returns = torch.where(finite, returns, torch.full_like(returns, -torch.inf))
            # Refit: softmax-weighted mean and std of the elites.
            elite_returns, idx = torch.topk(returns, min(cfg.num_elites, int(finite.sum())))
            elites = candidates[idx]  # (E, H, A)
            weights = torch.softmax(cfg.temperature * (elite_returns - elite_returns[0]), dim=0)[:, None, None]
            mean = (weights * elites).sum(0)  # (H, A)
            std = (weights * (elites - mean).pow(2)).sum(0).sqrt().clamp(cfg.min_std, cfg.max_std)
            mean[:d] = fixed  # exactly (the weighted sum of equal rows only rounds to them)

        # Select: step d of the mean; keep the mean for the warm start.
        if not torch.isfinite(mean).all():
            return self._fallback("non-finite plan mean")
        self._prev_mean = mean
        self._last_latent = latent
        self._last_value_cap = value_cap
        # The latents this tick already predicted for its last pool (the warm start is always in it).
        self._last_pool = (returns, pool_zs)
        latents, probe, value = self.predict_last_mean() if predict_mean else (None, None, float("nan"))
        if predict_mean and not (np.isfinite(latents).all() and np.isfinite(value)):
            return self._fallback("non-finite predicted rollout of the plan mean")
        return PlanResult(
            action=mean[d].clamp(-1.0, 1.0).cpu().numpy().astype(np.float32),
            mean=mean.cpu().numpy(),
            latents=latents,
            probe=probe,
            value=value,
            num_nonfinite=dropped,
        )

    @torch.inference_mode()
    def predict_last_mean(self) -> tuple[np.ndarray, np.ndarray, float]:
        """Predicted latents (H, D), their probe (H, 3) and the return of the last plan's mean (see ``plan_latent``).

        Raises:
            RuntimeError: no plan since the last ``reset`` or fallback.
        """
        if self._prev_mean is None or self._last_latent is None:
            raise RuntimeError("predict_last_mean: no plan since the last reset")
        latent, mean = self._last_latent, self._prev_mean[None]
        zs = self.model.predict(latent, mean)  # (1, H, D)
        value = float(self._returns(latent, mean, zs, self._last_value_cap)[0])
        return zs[0].cpu().numpy(), self.model.decode_probe(zs[0]).cpu().numpy(), value

    @torch.inference_mode()
    def sampled_rollouts(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Probe (K, H, 3) and return (K,) of ``k`` candidates the last plan considered, best first.

        The candidates of its last iteration, spread evenly over their return ranking; empty after a fallback
        or reset. For visualisation: it decodes the latents the plan already predicted for them (no model
        rollout) and draws no random numbers, so plans are the same whether or not it is called. The returns are
        what the candidates were ranked by (less the prior penalty when ``prior_weight`` > 0).
        """
        if self._last_pool is None or k <= 0:
            return np.zeros((0, self.cfg.horizon, 3), np.float32), np.zeros(0, np.float32)
        returns, zs = self._last_pool
        finite = int(torch.isfinite(returns).sum())
        k = min(k, finite)
        if k <= 0:
            return np.zeros((0, self.cfg.horizon, 3), np.float32), np.zeros(0, np.float32)
        order = torch.argsort(returns, descending=True)[:finite]  # -inf (non-finite) sorts last
        pick = order[torch.linspace(0, finite - 1, k, device=self.device).round().long()]
        probes = self.model.decode_probe(zs[pick]).cpu().numpy().astype(np.float32)
        return probes, returns[pick].cpu().numpy().astype(np.float32)

    def _committed(self, committed: np.ndarray | None) -> torch.Tensor:
        """``committed`` as a (d, A) tensor on the planner's device ((0, A) for None), validated."""
        a_dim = self.model.spec.action_dim
        if committed is None:
            return torch.zeros(0, a_dim, device=self.device)
        fixed = torch.as_tensor(np.asarray(committed, np.float32), device=self.device)
        if fixed.ndim != 2 or fixed.shape[1] != a_dim or fixed.shape[0] >= self.cfg.horizon:
            raise ValueError(f"committed actions must be (d, {a_dim}) with d < horizon {self.cfg.horizon}, "
                             f"got {tuple(fixed.shape)}")
        if not torch.isfinite(fixed).all():
            raise ValueError("committed actions must be finite")
        return fixed.clamp(-1.0, 1.0)

    def objective(self, latent: Latent, actions: torch.Tensor, anchor: torch.Tensor | None) -> torch.Tensor:
        """What this planner ranks plans by, differentiable: return less the prior penalty, (N,).

        The discounted model return of ``actions`` (N, H, A) from ``latent`` (batch N or 1) less ``prior_weight``
        x mean_t ||a_t - anchor_t||^2 (no penalty with ``anchor`` None). Outside inference mode, so gradients
        reach ``actions`` (``simdist_core.training.prior_improve`` trains the policy prior through it); ``plan``
        ranks its candidates with the same two functions. With ``terminal_value_cap`` the cap is the value at the
        end of ``anchor`` (``anchor`` is then required: it stands for the prior's plan).

        Raises:
            ValueError: ``terminal_value_cap`` without an ``anchor``.
        """
        value_cap = None
        if self.cfg.terminal_value_cap:
            if anchor is None:
                raise ValueError("objective: terminal_value_cap needs the anchor (the prior's plan) to cap by")
            anchor_zs = self.model.predict(latent, anchor.expand(1, *anchor.shape[-2:]))
            value_cap = self._terminal_values(latent, anchor_zs)[0]
        returns, _ = self._rollout(latent, actions, value_cap)
        return self._objective(returns, actions, anchor)

    def _prior_plan(self, latent: Latent, fixed: torch.Tensor) -> torch.Tensor:
        """(H, A): the policy prior's noise-free plan for this tick.

        From the observed latent; with ``prior_after_committed`` and ``fixed`` (d, A) actions in flight, ``fixed``
        followed by the prior's first H - d steps proposed from the latent predicted after them.
        """
        d, horizon = fixed.shape[0], self.cfg.horizon
        if not (d and self.cfg.prior_after_committed):
            return self.model.pi(latent)[0, :horizon]
        z_d = self.model.predict(latent, fixed[None])[:, -1]  # (1, D): the state the next command will meet
        return torch.cat([fixed, self.model.pi(Latent(z_d, latent.context))[0, : horizon - d]])

    def _prior_candidates(self, pi: torch.Tensor | None) -> torch.Tensor:
        """(Np, H, A): the policy prior's plan ``pi`` (H, A), then noisy copies of it (clipped to [-1, 1])."""
        n = self.cfg.num_pi_samples
        if n == 0 or pi is None:
            return torch.zeros(0, self.cfg.horizon, self.model.spec.action_dim, device=self.device)
        noise = torch.randn(n, *pi.shape, device=self.device, generator=self.generator)
        noise[0] = 0.0
        return (pi + self.cfg.pi_noise_std * noise).clamp(-1.0, 1.0)

    def _objective(self, returns: torch.Tensor, actions: torch.Tensor, pi: torch.Tensor | None) -> torch.Tensor:
        """What candidates are ranked by: ``returns`` (N,) less ``prior_weight`` x mean_t ||a_t - pi_t||^2.

        With ``prior_weight`` 0 the returns are passed through untouched (no arithmetic, so plans are bit-identical).
        """
        if not self.cfg.prior_weight or pi is None:
            return returns
        return returns - self.cfg.prior_weight * (actions - pi).pow(2).sum(-1).mean(-1)

    def _rollout(self, latent: Latent, actions: torch.Tensor,
                 value_cap: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """Discounted return (N,) and predicted latents (N, H, D) of candidates ``actions`` (N, H, A); None if N = 0."""
        if actions.shape[0] == 0:
            return actions.new_zeros(0), None
        zs = self.model.predict(latent, actions)
        return self._returns(latent, actions, zs, value_cap), zs

    def _returns(self, latent: Latent, actions: torch.Tensor, zs: torch.Tensor,
                 value_cap: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """The returns (N,) candidates are ranked by, from the running model's rollouts ``zs`` (``_score``).

        With ``reference_returns``, once the running model is not the reference: the lower (``"min"``) or the
        mean (``"mean"``) of it and the reference dynamics' return.
        """
        returns = self._score(latent, actions, zs, value_cap)
        if not (self.cfg.reference_returns and self._reference_differs):
            return returns
        ref = self._score(latent, actions, self.reference.predict(latent, actions), value_cap)  # heads are equal
        return torch.minimum(returns, ref) if self.cfg.reference_returns == "min" else 0.5 * (returns + ref)

    def _score(self, latent: Latent, actions: torch.Tensor, zs: torch.Tensor,
               value_cap: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """Sum_k discount^k r_k + discount^H min(V(z_H), ``value_cap``) of ``actions`` (N, H, A), ``zs`` (N, H, D).

        Without ``terminal_value`` the value term is left out; with ``value_cap`` None it is not capped.
        """
        returns = (self.model.reward(latent, zs, actions) * self._discounts).sum(1)  # (N,)
        if self.cfg.terminal_value:
            values = self._terminal_values(latent, zs)
            if value_cap is not None:
                values = torch.minimum(values, value_cap)
            returns = returns + self.cfg.discount**self.cfg.horizon * values
        return returns

    def _terminal_values(self, latent: Latent, zs: torch.Tensor) -> torch.Tensor:
        """V of each rollout's last predicted latent, (N,) for ``zs`` (N, H, D)."""
        return self.model.value(latent, zs[:, -1:])[:, 0]

    def _fallback(self, reason: str) -> PlanResult:
        """Safe result: zero action (default pose / hold); clears the warm start."""
        log.warning("planner fallback: %s", reason)
        self.reset()
        h, a = self.cfg.horizon, self.model.spec.action_dim
        d = getattr(getattr(self.model, "cfg", None), "latent_dim", 0)
        return PlanResult(
            action=np.zeros(a, np.float32),
            mean=np.zeros((h, a), np.float32),
            latents=np.zeros((h, d), np.float32),
            probe=np.zeros((h, 3), np.float32),
            value=float("nan"),
            fallback=reason,
        )

