"""Shared by the readers of the UR5e and slope evaluation protocols: protocol arms, paired and pooled intervals.

An arm is one `simdist eval --json` report; `load_arm` checks it is the protocol's run (task, episode count, planner
tie and terminal value) before it is read, so a reader never mixes in another run's file.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import (
    cluster_mean_ci,
    episode_summary,
    episode_values,
    mean_ci,
    paired_cluster_difference_ci,
    sign_test_p,
)

FUNNEL = ("reached_hole", "centred_at_hole", "aligned_at_hole", "entered_hole", "success")


def load_arm(path: Path, task: str, prior_weight: float, value: bool, episodes: int = 40,
             cap: bool = False) -> tuple[list[float], dict]:  # fmt: skip
    """(per-episode success, summary: rate, 95 % interval, funnel counts, checkpoint) of one protocol arm.

    ``cap``: whether the arm capped its terminal value (``terminal_value_cap``; reports from before the option have
    no such key and count as uncapped).

    Raises:
        SystemExit: the report is not the protocol's run.
    """
    report = json.loads(Path(path).read_text())
    planner = report["planner"]
    if (report["task"] != task or report["episodes"] != episodes
            or planner["prior_weight"] != prior_weight or planner["terminal_value"] != value
            or planner.get("terminal_value_cap", False) != cap):
        raise SystemExit(f"{path} is not the protocol's run")
    success = [float(e["success"]) for e in report["per_episode"]]
    mean, low, high = mean_ci(success)
    return success, {"success_rate": round(mean, 3), "success_ci95": [round(low, 3), round(high, 3)],
                     "funnel": {k: int(sum(e.get(k, 0.0) for e in report["per_episode"])) for k in FUNNEL},
                     "checkpoint": report["checkpoint"]}  # fmt: skip


def pooled_ci(clusters: list[list[float]]) -> dict:
    """Pooled mean and two-level bootstrap 95 % interval (models, then episodes) of per-model per-episode values."""
    mean, low, high = cluster_mean_ci(clusters)
    return {"mean": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}


def paired(a: list[list[float]], b: list[list[float]]) -> dict:
    """Paired a minus b over the same episodes: difference, two-level bootstrap interval, wins, losses, sign test.

    ``a`` and ``b`` hold per model (or seed) the values of the same episodes in the same order.
    """
    pairs = [(x, y) for ca, cb in zip(a, b, strict=True) for x, y in zip(ca, cb, strict=True)]
    wins, losses = sum(x > y for x, y in pairs), sum(x < y for x, y in pairs)
    diff, low, high = paired_cluster_difference_ci(a, b)
    return {"difference": diff, "ci95": [low, high], "wins": wins, "losses": losses,
            "sign_test_p": sign_test_p(wins, losses)}


def minus(a: list[float], b: list[float]) -> list[float]:
    """Per-episode a - b (same seeds, same order)."""
    return [x - y for x, y in zip(a, b, strict=True)]


def early_falls(per_episode: list[dict], start_s: float = 2.0) -> list[float]:
    """Per Go2 episode, 1.0 if it fell within ``start_s`` of the standing start (it failed to start), else 0.0."""
    return [float(bool(e["fell"]) and e["duration_s"] <= start_s) for e in per_episode]


def falls_within_2s(report: dict) -> int:
    """Episodes of a Go2 report that fell within 2 s of the standing start."""
    return int(sum(early_falls(report["per_episode"])))


def rounded_difference(a: list[list[float]], b: list[list[float]]) -> dict:
    """Paired a minus b (two-level bootstrap, as ``paired``), rounded to mm: difference and 95 % interval only."""
    d, low, high = paired_cluster_difference_ci(a, b)
    return {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}


def ratio_of_pooled_means(diffs: list[list[float]], zero: list[float]) -> float | None:
    """Mean of the models' episodes over zero-shot's, from their per-episode differences; None if zero-shot <= 0."""
    zero_mean = sum(zero) / len(zero)
    adapted_mean = zero_mean + sum(map(sum, diffs)) / (len(diffs) * len(zero))
    return round(adapted_mean / zero_mean, 3) if zero_mean > 0 else None


def gain_verdict(pooled: dict, ratio: float | None, wins: str, short: str, less: str, neither: str) -> str:
    """A PTFE protocol's verdict on a pooled difference to zero-shot, in that protocol's words.

    ``wins`` if its interval lies above 0 and the ratio of pooled means is >= 1.5, ``short`` if above 0 with a lower
    ratio, ``less`` if below 0, else ``neither``.
    """
    low, high = pooled["ci95"]
    if low > 0:
        return wins if ratio is not None and ratio >= 1.5 else short
    return less if high < 0 else neither


def progress_against_zero_shot(reports: dict[str, dict], task: str) -> tuple[dict, list[list[float]], list[float]]:
    """Go2 arms on the same episodes: each model's summary and paired difference to the ``"zero_shot"`` report.

    Returns (rows: every model's episode summary with its falls within 2 s, and for the others ``minus_zero_shot``
    plus the pooled ``pooled_minus_zero_shot``; the other models' per-episode differences to zero-shot; zero-shot's
    per-episode values).
    """
    rows, values = {}, {}
    for name, report in reports.items():
        rows[name] = {**episode_summary(report["per_episode"], task), "fell_within_2s": falls_within_2s(report)}
        values[name] = episode_values(report["per_episode"], task)
    zero = values["zero_shot"]
    diffs = []
    for name in (name for name in reports if name != "zero_shot"):
        rows[name]["minus_zero_shot"] = rounded_difference([values[name]], [zero])
        diffs.append(minus(values[name], zero))
    rows["pooled_minus_zero_shot"] = rounded_difference(diffs, [[0.0] * len(zero)] * len(diffs))
    return rows, diffs, zero


def write_report(out: dict, path: Path) -> None:
    """Print each arm and each paired or pooled interval of ``out``, then write it as JSON to ``path``."""
    for name, row in out["arms"].items():
        print(f"{name:<16} {row['success_rate']:.3f} {row['success_ci95']}  funnel {list(row['funnel'].values())}")
    for name, row in {**out["paired"], **out.get("pooled_adapted", {})}.items():
        print(f"{name:<36} {row['mean']:+.3f} {row['ci95']}")
    Path(path).write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)
