"""How far each committed slip figure's predictions shrink toward the mean: the fitted slope of predicted on actual.

Reads every ``bench_results/slip_*.json`` (``simdist figure slip --json``), re-summarises its per-window series
with the current ``summarise`` (which added ``forward_fit_slope`` after some of the figures were made) and writes
``bench_results/slip_fit_slopes.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core python bench_results/slip_fit_slopes.py``.
"""

import json
from pathlib import Path

import numpy as np
from simdist_core.eval.slip_trace import _column, summarise

KEYS = ("forward_fit_slope", "forward_corr", "forward_mae_m", "predicted_forward_mean_m")
GROUPS = {"good_strides": (0.2, np.inf), "sliding_back": (-np.inf, 0.0)}
"""Windows by actual forward displacement per 0.5 s, m: [low, high)."""


def _groups(report: dict) -> dict:
    """Mean actual and predicted forward displacement of the windows in each group."""
    series = {side: _column(report["episodes"], side, "forward") for side in ("actual", "before", "after")}
    actual, out = series["actual"], {}
    for name, (low, high) in GROUPS.items():
        mask = (actual >= low) & (actual < high)
        out[name] = {"windows": int(mask.sum()),
                     **{f"{key}_mean_m": round(float(x[mask].mean()), 4) if mask.any() else None
                        for key, x in series.items()}}  # fmt: skip
    return out


def main() -> None:
    """One row per figure: windows, the actual mean, and each model's slope, correlation and error."""
    out = {}
    for path in sorted(Path("bench_results").glob("slip_*.json")):
        if path.name == "slip_fit_slopes.json":
            continue
        report = json.loads(path.read_text())
        summary = summarise(report)
        out[path.name] = {"checkpoints": report["checkpoints"], "windows": summary["windows"],
                          "actual_forward_mean_m": summary["actual"]["forward_mean_m"],
                          **{model: {key: summary[model][key] for key in KEYS} for model in ("before", "after")},
                          "by_actual_forward": _groups(report)}
        print(f"{path.name:<44} slope before {summary['before']['forward_fit_slope']} "
              f"after {summary['after']['forward_fit_slope']}")
    Path("bench_results/slip_fit_slopes.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
