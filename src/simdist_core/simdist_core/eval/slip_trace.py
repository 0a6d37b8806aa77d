r"""``simdist figure slip``: predicted vs actual base displacement on a slippery slope, before and after finetuning.

The paper's mechanism figure. A held-out set of episodes of a shifted Go2 task (default ``go2/ptfe_slope``:
8 deg incline, foot friction 0.22, below anything pretraining saw) is recorded once, driven by the
*before* model's planner (the zero-shot behaviour, which slips), with seeds disjoint from the
adaptation benchmark's (that uses ``seed + 10_000 k`` for collection, ``+ 50_000`` for evaluation and
``+ 90_000`` for its held-out set, with ``seed`` 0 by default; this figure starts at 700_000). Per step it
stores the encoder's inputs, the executed action and the simulator's privileged truth: base position,
heading, the probe target (base velocity in the yaw frame) and the cumulative foot slip.

Both models are then scored on that SAME recording. At every ``stride``-th start step t with H steps
left, each model encodes the history window ending at o_t, rolls its dynamics open loop over the
actions actually executed (a_t .. a_{t+H-1}), decodes the probe of z_{t+1} .. z_{t+H} and integrates it:

    predicted displacement  d_pred = sum_{k=1..H} probe(z_{t+k}) * dt      (metres, yaw frame of each step)
    actual displacement     d_act  = R(yaw_t)^T (p_{t+H} - p_t), horizontal  (metres, yaw frame at t)

split into *forward* (the heading axis; up the slope when the robot walks straight up) and *lateral*.
Because the robot may turn on the slope (the zero-shot Go2 turns sideways and slides down), both are
also reported along *uphill*: the world +x axis, up the incline of the ``slope`` terrains (elsewhere
simply world x); the prediction is rotated there by the heading at t.
The same sum over the simulator's own probe targets (``truth_integral``) is stored too: it is what a
perfect probe would predict, so its gap to ``d_act`` is the floor that integrating yaw-frame velocities
(turning, sampling at 50 Hz) leaves; it is reported, not subtracted.

"Slip" in this figure is the **forward shortfall**: ``d_pred_forward - d_act_forward``, metres per
horizon (H = 25 steps = 0.5 s for the shipped Go2 model): how much less the base advanced than the model
expected for those actions. A model that expects grip it does not get has a positive shortfall; a
model that has learned the slippery dynamics has one near 0. For reference each window also carries the
simulator's own foot slip over the same steps (``foot_slip_m``: summed horizontal travel of feet that
stayed in contact, all four feet; ``Go2Env.metrics``), which no model predicts.

Per model: mean absolute error of forward, lateral and horizontal (2-D norm) displacement, the mean
shortfall (bias), the Pearson correlation of predicted vs actual forward displacement, and the
correlation of the shortfall with the window's foot slip; the time trace of one episode (the one whose
feet slid furthest in all) is plotted with a scatter over all windows.

The figure (2026-12-02, ``docs/results/slip.md``): ``checkpoints/go2_v5`` before
and after 30 minutes of dynamics-only PTFE finetuning, forward MAE 21.2 -> 8.4 cm per 0.5 s, correlation
-0.22 -> 0.85. An earlier development run (2026-12-01), with the probe still too weak to show it: the shipped
``checkpoints/go2`` against a dynamics-only finetune of it on 2 minutes of its own PTFE experience::

    simdist bench adaptation --task go2/ptfe_slope --checkpoint checkpoints/go2 --minutes 0,2 \\
        --methods dynamics_only --set eval_episodes=1 --json /tmp/slip_dev/a.json --workdir /tmp/slip_dev/w
    simdist finetune --checkpoint checkpoints/go2 --data /tmp/slip_dev/w/dynamics_only --out /tmp/slip_dev/after
    simdist figure slip --task go2/ptfe_slope --before checkpoints/go2 --after /tmp/slip_dev/after \\
        --episodes 10 --seconds 10 --json /tmp/slip_dev/slip.json --plot /tmp/slip_dev/slip.png

249 windows (every zero-shot episode fell, after 1.2-7.8 s): forward MAE 12.4 -> 10.0 cm per 0.5 s, but
the correlation with the actual displacement is negative for both (-0.48, -0.62): the finetuned model
predicts about 0.13 m every window. Uphill (world x): MAE 14.8 -> 14.1 cm, correlation 0.18 -> 0.94, both
predicting the base to climb 10-14 cm more than it did (it slid down 3.4 cm per window on average). The
shipped checkpoint's probe reads its encoder latents well (one go2/flat episode: 6 cm/s mean error) but
not its predicted ones (one step ahead: -0.05 m/s predicted against 0.69 m/s true, mean over the
episode), so a figure made with it shows mostly the probe, not the dynamics.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from simdist_core.cliargs import ArgumentParser, UsageError, check_positive, checkpoint_dir, cli_main
from simdist_core.config import parse_overrides, to_dict
from simdist_core.eval.closed_loop import check_task_and_planner, planner_keys_help, task_keys_help
from simdist_core.planning.mppi import PRESETS

log = logging.getLogger(__name__)

MODELS = ("before", "after")
"""The two checkpoints compared, in plot order."""
COLOURS = {"before": "tab:red", "after": "tab:blue"}
"""Plot colour of each model."""


@dataclass(frozen=True, kw_only=True)
class SlipTraceConfig:
    """Which held-out episodes to record and how the models are scored on them."""

    task: str = "go2/ptfe_slope"
    """A Go2 task id (the probe must be the base velocity)."""
    episodes: int = 10
    """Held-out episodes (seeds ``seed .. seed + episodes - 1``); the zero-shot Go2 falls on PTFE within 1-8 s."""
    seconds: float = 10.0
    """Cap on each episode's simulated seconds (0 = the task's own length); falls end episodes earlier."""
    seed: int = 700_000
    """First episode seed (and the planner's); far from every seed ``simdist bench adaptation`` uses."""
    horizon: int | None = None
    """Open-loop steps per window (None = the models' horizon; at most that)."""
    stride: int = 5
    """Control steps between two window starts."""
    preset: str = "cpu"
    """Planner preset of the before model's planner, or ``checkpoint`` (the config stored beside its weights)."""
    heading_hold: bool = False
    """Drive the held-out episodes with the heading hold on the command (``simdist_core.planning.heading_hold``), as a
    model made for it is deployed; the recorded command is the held one, which is what both models are scored on."""

    def __post_init__(self) -> None:
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {self.episodes=}")
        if self.seconds < 0:
            raise ValueError(f"seconds must be >= 0, got {self.seconds=}")
        if self.horizon is not None and self.horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {self.horizon=}")
        if self.stride < 1:
            raise ValueError(f"stride must be >= 1, got {self.stride=}")


@dataclass
class Recording:
    """One held-out episode as the robot saw it, plus the simulator's truth (T steps, T + 1 states)."""

    seed: int
    obs: list[dict[str, np.ndarray]]
    """T + 1 observations: o_0 (after reset) .. o_T."""
    actions: np.ndarray
    """(T, A) executed actions; ``actions[t]`` took o_t to o_{t+1}."""
    base_pos: np.ndarray
    """(T + 1, 3) world base position at each observation."""
    yaw: np.ndarray
    """(T + 1,) base heading (rad)."""
    probe: np.ndarray
    """(T + 1, 3) the probe target: base velocity in the yaw frame (m/s)."""
    foot_slip_m: np.ndarray
    """(T + 1,) cumulative foot slip (``Go2Env.metrics``) at each observation."""
    metrics: dict[str, float]
    """``env.metrics()`` at the end of the episode."""

    @property
    def steps(self) -> int:
        """T: control steps executed."""
        return len(self.actions)


def _sig(x: float) -> float | None:
    """``x`` to 5 significant digits (None if not finite): the JSON stays small and nothing plotted changes."""
    return float(f"{float(x):.5g}") if np.isfinite(x) else None


def _sigs(values: np.ndarray) -> list[float | None]:
    return [_sig(v) for v in np.asarray(values, np.float64).reshape(-1)]


def record_episode(env: Any, planner: Any, *, seed: int, max_steps: int,  # noqa: ANN401
                   heading_hold: bool = False) -> Recording:
    """Run one planner episode (``eval.rollout.run_episode``, no exploration noise) and record it.

    Args:
        env: a Go2 task (``make_env``).
        planner: ``reset()`` + ``plan(model_input)``, e.g. the before model's MPPI planner.
        seed: env reset seed.
        max_steps: control-step cap (a fall or the task's time limit ends it earlier).
        heading_hold: hold the starting heading on the command (the recorded observations carry the held command).
    """
    from simdist_core.eval.rollout import run_episode
    from simdist_core.sim.go2_obs import yaw_from_quat

    obs: list[dict[str, np.ndarray]] = []
    actions: list[np.ndarray] = []
    truth: dict[str, list[Any]] = {"base_pos": [], "yaw": [], "probe": [], "foot_slip_m": []}

    def note_state() -> None:
        priv = env.privileged_state()
        truth["base_pos"].append(np.asarray(priv["base_pos"], np.float64).copy())
        truth["yaw"].append(yaw_from_quat(priv["base_quat"]))
        truth["probe"].append(np.asarray(priv["probe"], np.float64).copy())
        truth["foot_slip_m"].append(float(env.metrics()["foot_slip_m"]))

    def on_reset(first: dict[str, np.ndarray]) -> None:
        obs.append({k: np.array(v, copy=True) for k, v in first.items()})
        note_state()

    def on_step(_before: dict[str, np.ndarray], action: np.ndarray, result: Any) -> None:  # noqa: ANN401
        actions.append(np.asarray(action, np.float32).copy())
        obs.append({k: np.array(v, copy=True) for k, v in result.obs.items()})
        note_state()

    stats = run_episode(env, planner, seed=seed, max_steps=max_steps, on_reset=on_reset, on_step=on_step,
                        heading_hold=heading_hold)
    return Recording(seed=seed, obs=obs, actions=np.stack(actions) if actions else np.zeros((0, env.spec.action_dim)),
                     base_pos=np.stack(truth["base_pos"]), yaw=np.asarray(truth["yaw"]),
                     probe=np.stack(truth["probe"]), foot_slip_m=np.asarray(truth["foot_slip_m"]),
                     metrics=dict(stats.metrics))  # fmt: skip


def window_starts(steps: int, horizon: int, stride: int) -> np.ndarray:
    """Start steps 0, stride, 2 stride, ... whose H executed actions all exist (t + H <= steps)."""
    return np.arange(0, steps - horizon + 1, stride, dtype=np.int64) if steps >= horizon else np.zeros(0, np.int64)


def model_inputs(rec: Recording, spec: Any, starts: np.ndarray) -> dict[str, torch.Tensor]:  # noqa: ANN401
    """The encoder's input windows ending at o_t for each start t, batched (as ``ObservationHistory`` built them)."""
    from simdist_core.data.history import ObservationHistory

    history = ObservationHistory(spec)
    history.reset(rec.obs[0])
    wanted, rows = {int(t) for t in starts}, {}
    for t in range(int(starts.max()) + 1 if len(starts) else 0):
        if t > 0:
            history.record_action(rec.actions[t - 1])
            history.push(rec.obs[t])
        if t in wanted:
            rows[t] = history.model_input("cpu")
    return {key: torch.cat([rows[int(t)][key] for t in starts]) for key in rows[int(starts[0])]}


@torch.no_grad()
def predicted_displacement(model: torch.nn.Module, rec: Recording, starts: np.ndarray,
                           horizon: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(decoded probe (N, H, 3), predicted displacement (N, 3)) of each window, open loop over the executed actions.

    The displacement is the probe integrated over the horizon (``planning.probe.probe_to_positions``, its last
    point): the sum of the predicted yaw-frame base velocities times the control period.
    """
    from simdist_core.planning.probe import probe_to_positions

    if len(starts) == 0:
        return np.zeros((0, horizon, 3)), np.zeros((0, 3))
    latent = model.encode(model_inputs(rec, model.spec, starts))
    actions = torch.as_tensor(np.stack([rec.actions[t: t + horizon] for t in starts]), dtype=latent.z.dtype)
    probe = model.decode_probe(model.predict(latent, actions)).double().numpy()  # (N, H, 3)
    dt = model.spec.control_dt
    disp = np.stack([probe_to_positions(p, model.spec.probe, dt)[-1] for p in probe])  # (N, 3)
    return probe, disp


def actual_displacement(rec: Recording, starts: np.ndarray, horizon: int, dt_s: float) -> dict[str, np.ndarray]:
    """What happened over each window: base displacement in the yaw frame at t, the probe targets' integral, foot slip.

    Returns:
        ``forward``/``lateral`` (N,): R(yaw_t)^T (p_{t+H} - p_t); ``uphill`` (N,): world x of p_{t+H} - p_t
        (up the incline of ``slope`` terrain); ``truth_integral_forward``/``_lateral`` (N,):
        sum of the simulator's probe targets at t+1 .. t+H times dt (what a perfect probe would predict);
        ``foot_slip_m`` (N,): the simulator's foot slip accumulated over the window.
    """
    end = starts + horizon
    delta = rec.base_pos[end, :2] - rec.base_pos[starts, :2]
    c, s = np.cos(rec.yaw[starts]), np.sin(rec.yaw[starts])
    integral = np.stack([rec.probe[t + 1: t + horizon + 1].sum(0) * dt_s for t in starts]) if len(starts) else \
        np.zeros((0, 3))  # fmt: skip
    return {"forward": c * delta[:, 0] + s * delta[:, 1], "lateral": -s * delta[:, 0] + c * delta[:, 1],
            "uphill": delta[:, 0],
            "truth_integral_forward": integral[:, 0], "truth_integral_lateral": integral[:, 1],
            "foot_slip_m": rec.foot_slip_m[end] - rec.foot_slip_m[starts]}  # fmt: skip


def score_episode(models: dict[str, torch.nn.Module], rec: Recording, horizon: int, stride: int) -> dict[str, Any]:
    """Every window of one recorded episode, scored for each model (JSON-ready series)."""
    dt = next(iter(models.values())).spec.control_dt
    starts = window_starts(rec.steps, horizon, stride)
    actual = actual_displacement(rec, starts, horizon, dt)
    out: dict[str, Any] = {
        "seed": rec.seed, "steps": rec.steps, "metrics": {k: _sig(v) for k, v in rec.metrics.items()},
        "foot_slip_per_s": _sig(rec.foot_slip_m[-1] / max(rec.steps * dt, 1e-9)),
        "t_s": _sigs(starts * dt), "start_step": [int(t) for t in starts],
        "actual": {k: _sigs(v) for k, v in actual.items()},
    }  # fmt: skip
    c, s = np.cos(rec.yaw[starts]), np.sin(rec.yaw[starts])
    for name, model in models.items():
        _, disp = predicted_displacement(model, rec, starts, horizon)
        out[name] = {"forward": _sigs(disp[:, 0]), "lateral": _sigs(disp[:, 1]),
                     "uphill": _sigs(c * disp[:, 0] - s * disp[:, 1]),  # yaw frame at t -> world x
                     "shortfall": _sigs(disp[:, 0] - actual["forward"])}  # fmt: skip
    return out


def _corr(a: np.ndarray, b: np.ndarray) -> float | None:
    """Pearson correlation, None when undefined (fewer than 3 points or a constant series)."""
    if len(a) < 3 or np.std(a) < 1e-12 or np.std(b) < 1e-12:
        return None
    return _sig(np.corrcoef(a, b)[0, 1])


def _fit_slope(predicted: np.ndarray, actual: np.ndarray) -> float | None:
    """Least-squares slope of predicted on actual displacement; None if the actual is constant or under 3 windows.

    1 when the prediction follows the motion window by window; below 1 when it shrinks toward the mean (a model
    that learned the average slip but not how it depends on the stride).
    """
    if len(actual) < 3 or np.std(actual) < 1e-12:
        return None
    return _sig(np.cov(predicted, actual)[0, 1] / np.var(actual, ddof=1))


def _column(episodes: list[dict[str, Any]], *keys: str) -> np.ndarray:
    """One series concatenated over the episodes (``keys`` index into each episode's dict)."""
    parts = []
    for e in episodes:
        x = e
        for k in keys:
            x = x[k]
        parts.append(np.asarray(x, np.float64))
    return np.concatenate(parts) if parts else np.zeros(0)


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    """Per model over all windows: MAE (forward, lateral, 2-D), mean shortfall, correlations, fitted slope; actuals."""
    eps = report["episodes"]
    fwd, lat, up = (_column(eps, "actual", k) for k in ("forward", "lateral", "uphill"))
    slip = _column(eps, "actual", "foot_slip_m")
    tif, til = _column(eps, "actual", "truth_integral_forward"), _column(eps, "actual", "truth_integral_lateral")
    n = len(fwd)
    out: dict[str, Any] = {"windows": n}
    if n == 0:
        return out
    out["actual"] = {
        "forward_mean_m": _sig(fwd.mean()), "lateral_mean_m": _sig(lat.mean()), "uphill_mean_m": _sig(up.mean()),
        "foot_slip_mean_m": _sig(slip.mean()),
        "truth_integral_forward_mae_m": _sig(np.abs(tif - fwd).mean()),
        "truth_integral_horizontal_mae_m": _sig(np.hypot(tif - fwd, til - lat).mean()),
    }  # fmt: skip
    for name in MODELS:
        pf, pl, pu = (_column(eps, name, k) for k in ("forward", "lateral", "uphill"))
        short = pf - fwd
        out[name] = {
            "forward_mae_m": _sig(np.abs(short).mean()), "lateral_mae_m": _sig(np.abs(pl - lat).mean()),
            "horizontal_mae_m": _sig(np.hypot(short, pl - lat).mean()),
            "shortfall_mean_m": _sig(short.mean()), "predicted_forward_mean_m": _sig(pf.mean()),
            "forward_corr": _corr(pf, fwd), "forward_fit_slope": _fit_slope(pf, fwd),
            "shortfall_vs_foot_slip_corr": _corr(short, slip),
            "uphill_mae_m": _sig(np.abs(pu - up).mean()), "uphill_shortfall_mean_m": _sig((pu - up).mean()),
            "uphill_corr": _corr(pu, up),
        }  # fmt: skip
    return out


def collect(models: dict[str, torch.nn.Module], cfg: SlipTraceConfig, planner: Any, *,  # noqa: ANN401
            env_overrides: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """Record ``cfg.episodes`` held-out episodes with ``planner`` and score both models on each.

    Args:
        models: ``{"before": ..., "after": ...}`` (same robot, Go2 probe).
        cfg: episodes, seeds, horizon (None: the models' horizon) and stride.
        planner: drives the recorded episodes (the before model's planner, for the zero-shot behaviour).
        env_overrides: task config overrides.

    Returns:
        JSON-ready dict: task, config, control period, horizon, the ``episodes`` (series per window),
        ``trace_episode`` (index of the episode with the most foot slip, the one the figure traces).
    """
    from simdist_core.sim.base import make_env

    check_models(models, cfg.task, cfg.horizon)
    horizon = cfg.horizon or min(m.spec.horizon for m in models.values())
    env = make_env(cfg.task, env_overrides or {})
    max_steps = int(round(cfg.seconds * env.spec.control_hz)) if cfg.seconds > 0 else 10**9
    episodes = []
    for i in range(cfg.episodes):  # (Go2 envs hold no renderer: nothing to close)
        rec = record_episode(env, planner, seed=cfg.seed + i, max_steps=max_steps, heading_hold=cfg.heading_hold)
        episodes.append(score_episode(models, rec, horizon, cfg.stride))
        log.info("seed %d: %d steps, %d windows, progress %.2f m, foot slip %.2f m", rec.seed, rec.steps,
                 len(episodes[-1]["t_s"]), rec.metrics.get("forward_progress_m", float("nan")),
                 rec.foot_slip_m[-1])  # fmt: skip
    with_windows = [i for i, e in enumerate(episodes) if e["t_s"]]
    trace = max(with_windows, key=lambda i: episodes[i]["metrics"]["foot_slip_m"] or 0.0) if with_windows else None
    return {"task": cfg.task, "config": to_dict(cfg), "env_overrides": dict(env_overrides or {}),
            "control_dt_s": env.spec.control_dt, "horizon": horizon, "horizon_s": horizon * env.spec.control_dt,
            "seeds": [cfg.seed + i for i in range(cfg.episodes)], "episodes": episodes, "trace_episode": trace}


def check_models(models: dict[str, torch.nn.Module], task: str, horizon: int | None = None) -> None:
    """Both models are for the task's robot, decode a base velocity, and can predict ``horizon`` steps.

    Raises:
        ValueError: naming the model and what is wrong.
    """
    robot = task.split("/")[0]
    for name, model in models.items():
        if model.spec.name != robot:
            raise ValueError(f"the {name} model is for {model.spec.name} but --task {task} is a {robot} task")
        if model.spec.probe != "base_velocity":
            raise ValueError(f"the {name} model's probe is {model.spec.probe!r}; the slip figure needs a base "
                             "velocity probe (a Go2 model)")  # fmt: skip
        if horizon is not None and horizon > model.spec.horizon:
            raise ValueError(f"--horizon {horizon} exceeds the {name} model's horizon {model.spec.horizon}")


def plot(report: dict[str, Any], path: Path) -> None:
    """Trace of one slipping episode (displacement; shortfall vs foot slip) and a scatter over all windows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    horizon_s = report["horizon_s"]
    summary = report.get("summary") or summarise(report)
    labels = {m: f"{m}" + (f" ({report['checkpoints'][m]})" if report.get("checkpoints") else "") for m in MODELS}
    if report["trace_episode"] is not None:
        e = report["episodes"][report["trace_episode"]]
        t = np.asarray(e["t_s"], np.float64)
        ax = axes[0]
        ax.plot(t, e["actual"]["forward"], color="k", lw=2, label="actual (simulator)")
        for m in MODELS:
            ax.plot(t, e[m]["forward"], color=COLOURS[m], lw=1.4, label=f"predicted, {labels[m]}")
        ax.set_title(f"seed {e['seed']}: forward displacement over the next {horizon_s:g} s", fontsize=10)
        ax.set_xlabel("window start (s)")
        ax.set_ylabel(f"forward displacement per {horizon_s:g} s (m)")
        ax.legend(fontsize=7)
        ax = axes[1]
        for m in MODELS:
            ax.plot(t, e[m]["shortfall"], color=COLOURS[m], lw=1.4, label=f"predicted - actual, {m}")
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_title("slip: forward shortfall against the model's prediction", fontsize=10)
        ax.set_xlabel("window start (s)")
        ax.set_ylabel(f"forward shortfall per {horizon_s:g} s (m)")
        slip_ax = ax.twinx()  # the feet slide metres while the base falls short by centimetres: own scale
        slip_ax.plot(t, e["actual"]["foot_slip_m"], color="0.5", ls="--", lw=1.2)
        slip_ax.set_ylabel("dashed: sim foot slip, 4 feet (m)", color="0.4")
        ax.legend(fontsize=7)
    ax = axes[2]
    actual = _column(report["episodes"], "actual", "forward")
    predicted = {m: _column(report["episodes"], m, "forward") for m in MODELS}
    for m in MODELS:
        stats = summary.get(m, {})
        mae, r = stats.get("forward_mae_m"), stats.get("forward_corr")
        ax.scatter(actual, predicted[m], s=8, alpha=0.5, color=COLOURS[m],
                   label=f"{m}: MAE {'n/a' if mae is None else f'{100 * mae:.1f} cm'}, "
                         f"r {'n/a' if r is None else f'{r:.2f}'}")  # fmt: skip
    if len(actual):
        every = np.concatenate([actual, *predicted.values()])
        lo, hi = float(np.min(every)), float(np.max(every))
        ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, label="predicted = actual")
    ax.set_title(f"all {summary['windows']} windows, {len(report['episodes'])} episodes", fontsize=10)
    ax.set_xlabel(f"actual forward displacement per {horizon_s:g} s (m)")
    ax.set_ylabel("predicted: probe integrated open loop (m)")
    ax.legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(f"{report['task']}: predicted vs actual base displacement on held-out before-model episodes")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist figure slip", description=__doc__.splitlines()[0],
                            key_help={"--set": task_keys_help, "--planner": planner_keys_help})
    parser.add_argument("--before", type=Path, required=True,
                        help="checkpoint before finetuning (its planner drives the held-out episodes)")
    parser.add_argument("--after", type=Path, required=True, help="checkpoint after finetuning (same robot)")
    parser.add_argument("--task", default="go2/ptfe_slope", help="Go2 task of the held-out episodes")
    parser.add_argument("--episodes", type=int, default=10, help="held-out episodes (seeds seed .. seed + N - 1)")
    parser.add_argument("--seconds", type=float, default=10.0, help="cap per episode in simulated seconds (0 = task)")
    parser.add_argument("--seed", type=int, default=700_000,
                        help="first episode seed (disjoint from the adaptation benchmark's)")
    parser.add_argument("--horizon", type=int, help="open-loop steps per window (default: the models' horizon)")
    parser.add_argument("--stride", type=int, default=5, help="control steps between window starts")
    parser.add_argument("--preset", default="cpu", choices=["checkpoint", *sorted(PRESETS)],
                        help="planner preset of the before model; checkpoint = the config stored beside it")
    parser.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                        help="planner config override, repeatable")
    parser.add_argument("--set", dest="env_set", action="append", default=[], metavar="KEY=VALUE",
                        help="task config override, repeatable")
    parser.add_argument("--heading-hold", action="store_true",
                        help="hold the starting heading on the command while recording (a model made for it)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--plot", type=Path, required=True, help="figure (PNG, PDF or SVG)")
    parser.add_argument("--json", type=Path, help="per-window series, summary, seeds, checkpoints and command")
    return parser.parse_args(argv)


def validate(args: argparse.Namespace) -> tuple[SlipTraceConfig, dict[str, str], dict[str, str]]:
    """The trace config and the task and planner overrides, checked before any checkpoint is loaded.

    Raises:
        UsageError: a bad task, override, count, horizon, output suffix or checkpoint path.
    """
    check_positive("--threads", args.threads)
    check_positive("--episodes", args.episodes)
    check_positive("--seconds", args.seconds, allow_zero=True)
    check_positive("--stride", args.stride)
    if args.horizon is not None:
        check_positive("--horizon", args.horizon)
    if not args.task.startswith("go2/"):
        raise UsageError(f"--task {args.task!r}: the slip figure needs a Go2 task, e.g. go2/ptfe_slope")
    if args.plot.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise UsageError(f"--plot {str(args.plot)!r} must end in .png, .pdf or .svg")
    env_overrides, planner_overrides = parse_overrides(args.env_set), parse_overrides(args.planner_set)
    try:
        cfg = SlipTraceConfig(task=args.task, episodes=args.episodes, seconds=args.seconds, seed=args.seed,
                              horizon=args.horizon, stride=args.stride, preset=args.preset,
                              heading_hold=args.heading_hold)  # fmt: skip
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_task_and_planner(args.task, env_overrides, args.preset, planner_overrides)
    checkpoint_dir("--before", args.before)
    checkpoint_dir("--after", args.after)
    return cfg, env_overrides, planner_overrides


@cli_main("simdist figure slip")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist figure slip``; returns 0, 1 (no episode lasted a horizon) or 2 (bad input)."""
    args = _parse(argv)
    cfg, env_overrides, planner_overrides = validate(args)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    from simdist_core.checkpoint import load_for_cli
    from simdist_core.eval.closed_loop import make_planner

    loaded = {m: load_for_cli(f"--{m}", getattr(args, m)) for m in MODELS}
    models = {m: model.eval().requires_grad_(False) for m, (model, _) in loaded.items()}
    try:
        check_models(models, cfg.task, cfg.horizon)
        planner = make_planner(models["before"], loaded["before"][1], cfg.preset, planner_overrides, cfg.seed)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    from simdist_core.training.common import git_describe

    commit = git_describe()  # before the run: files edited while it runs must not mark it dirty
    report = collect(models, cfg, planner, env_overrides=env_overrides)
    report.update(command="simdist figure slip " + " ".join(argv), git_commit=commit,
                  checkpoints={m: str(getattr(args, m)) for m in MODELS}, planner=to_dict(planner.cfg),
                  summary=summarise(report))  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    s = report["summary"]
    if not s["windows"]:
        print(f"simdist figure slip: no episode lasted {report['horizon']} steps (every one fell or was capped "
              "sooner); nothing to plot", file=sys.stderr)  # fmt: skip
        return 1
    plot(report, args.plot)
    parts = [f"{m} forward MAE {s[m]['forward_mae_m']} m, shortfall {s[m]['shortfall_mean_m']} m, "
             f"r {s[m]['forward_corr']}" for m in MODELS]  # fmt: skip
    print(f"{cfg.task}: {s['windows']} windows of {report['horizon']} steps over {cfg.episodes} episodes; "
          + "; ".join(parts) + f"; actual forward {s['actual']['forward_mean_m']} m, foot slip "
          f"{s['actual']['foot_slip_mean_m']} m per window; figure {args.plot}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

