"""Reading ``simdist bench adaptation`` reports: paired summaries with intervals, merging seeds, the plot.

Statistics: every evaluation point records the task metric of each episode (``episode_metric``, with
``episode_fell`` and ``episode_duration_s``), its 95 % bootstrap interval (``metric_ci95``) and the falls per
simulated minute of evaluation (``falls_per_min``); ``summary`` adds, per method and minute mark
(``by_minute``), paired intervals of the ratio and difference vs zero-shot (and ``dynamics_only`` vs
``full_finetune``): both ran the same evaluation episodes.

Several seeds (``seed`` seeds collection, held-out set, evaluation episodes and finetuning): run one
process per seed, then merge the reports (they must differ only in ``seed``; anything else is refused,
exit status 2, naming what differs)::

    simdist bench adaptation --task go2/ptfe_slope --minutes 0,5,10,20,30 --set eval_episodes=10 \
        --set seed=0 --json s0.json &    # ... and the same with seed=1 -> s1.json, seed=2 -> s2.json
    simdist bench adaptation --merge s0.json s1.json s2.json --json merged.json --plot merged.png

or ``--seeds 0,1,2`` to run them one after the other in one process (``<workdir>/seed-S``) and merge. A
merged report pools the episodes of all seeds: mean, 95 % interval from a two-level bootstrap (seeds,
then episodes within each; ``stats.cluster_mean_ci``), per-seed means and errors (``*_per_seed``); the
plot draws the intervals as error bars, and the errors as the mean over seeds with their min-max.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simdist_core.eval import stats


def falls_per_minute(fell: list[float] | None, durations: list[float]) -> float | None:
    """Episodes that fell per simulated minute of evaluation (``None`` without fall flags or time)."""
    total_s = sum(durations)
    return None if fell is None or total_s <= 0 else sum(fell) / (total_s / 60.0)


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    """Ratios the targets talk about, from the last minute mark of each method.

    The metric ratio is only defined for a positive zero-shot metric (a ratio of two negative
    progress values would read "better" when it is worse); the difference is always given. A method
    ``M@LABEL`` is compared with ``zero_shot@LABEL``, every other one with ``zero_shot``. Error ratios
    are ``None`` where the method has no such error (the RL baselines have no latent).

    With per-episode values (reports written since they are recorded; one seed or merged seeds) each
    method also gets ``metric_ratio_vs_zero_shot_ci95`` / ``metric_minus_zero_shot_ci95`` (last mark) and
    ``by_minute`` (see :func:`minute_summary`).
    """
    out: dict[str, Any] = {}
    for method, res in results.items():
        if method.split("@")[0] == "zero_shot":
            continue
        zero = results["zero_shot@" + method.split("@", 1)[1]] if "@" in method else results["zero_shot"]
        zero_metric, zero_err = zero["metric"][0], zero["latent_error"][0]
        last_metric, last_err = res["metric"][-1], res["latent_error"][-1]
        out[method] = {
            "minutes": res["minutes"][-1],
            "metric_minus_zero_shot": last_metric - zero_metric,
            "metric_ratio_vs_zero_shot": last_metric / zero_metric if zero_metric > 0 else None,
            "latent_error_ratio_zero_shot_over_method": zero_err / last_err if last_err else None,
        }
        for key in ("probe_error", "reward_error", "reward_error_task"):  # absent in reports written before them
            if key in res and key in zero:
                last = res[key][-1]
                out[method][f"{key}_ratio_zero_shot_over_method"] = zero[key][0] / last if last else None
        if res.get("reward_per_step", [None])[-1] is not None and zero.get("reward_per_step", [None])[0] is not None:
            out[method]["reward_per_step_minus_zero_shot"] = res["reward_per_step"][-1] - zero["reward_per_step"][0]
        if episode_clusters(res, 0) is not None and episode_clusters(zero, 0) is not None:
            rows = minute_summary(res, zero, rivals_of(method, results))
            out[method]["by_minute"] = rows
            for key in ("metric_ratio_vs_zero_shot_ci95", "metric_minus_zero_shot_ci95"):
                out[method][key] = rows[-1][key]
    return out


def rivals_of(method: str, results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What ``method`` is compared with, paired, besides zero-shot: name in the report's keys -> results.

    Only dynamics-only finetuning (SimDist) has rivals: the other methods from the same checkpoint (full
    finetuning, RLPD, IQL), named without the checkpoint's label, and, from the main checkpoint, dynamics-only
    finetuning of every ``--compare`` checkpoint (``dynamics_only@LABEL``: the expert-only ablation). Reports
    name a comparison ``metric_minus_<rival>`` and ``metric_ratio_vs_<rival>``.
    """
    base, _, label = method.partition("@")
    if base != "dynamics_only":
        return {}
    rivals = {}
    for other, res in results.items():
        other_base, _, other_label = other.partition("@")
        if other_label == label and other_base not in ("zero_shot", "dynamics_only"):
            rivals[other_base] = res
        elif not label and other_label and other_base == "dynamics_only":
            rivals[other] = res
    return rivals


def episode_clusters(res: dict[str, Any], i: int) -> list[list[float]] | None:
    """Per-seed lists of the per-episode task metric at minute mark ``i`` (one list for a one-seed report).

    ``None`` for reports written before per-episode values were recorded.
    """
    if "episode_metric_per_seed" in res:
        return res["episode_metric_per_seed"][i]
    values = res.get("episode_metric", [None] * (i + 1))[i]
    return None if values is None else [values]


def _ci(fn: Any, *args: Any) -> tuple[float | None, list[float] | None]:  # noqa: ANN401
    """``fn(*args)`` as (value, [low, high]); (None, None) where the statistic is undefined."""
    try:
        value, low, high = fn(*args)
    except ValueError:
        return None, None
    return value, [low, high]


def minute_summary(res: dict[str, Any], zero: dict[str, Any],
                   rivals: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Per minute mark of ``res``: its metric and falls, and paired comparisons with zero-shot and ``rivals``.

    Falls per simulated minute of evaluation are given for the method and for zero-shot. Every comparison is
    paired: within a seed both series ran the same evaluation episodes (same seeds), so the two-level bootstrap
    (``stats.paired_cluster_*``) resamples seeds, then episode indices, and applies the draw to both. The ratio
    is ``None`` where the denominator's mean is not positive (e.g. a negative zero-shot progress); the
    difference is always given. Each of ``rivals`` (name -> results, :func:`rivals_of`) that has the same
    minute mark gives ``metric_ratio_vs_<name>`` / ``metric_minus_<name>`` with their intervals (RL baselines
    evaluate on the same episode seeds). The latent-error ratio is zero-shot over
    method of the (seed-mean) errors, with the per-seed ratios.
    """
    rows = []
    zero_eps = episode_clusters(zero, 0)
    for i, minutes in enumerate(res["minutes"]):
        eps = episode_clusters(res, i)
        mean, ci = _ci(stats.cluster_mean_ci, eps)
        row: dict[str, Any] = {"minutes": minutes, "metric": mean, "metric_ci95": ci,
                               "falls_per_min": res.get("falls_per_min", [None] * len(res["minutes"]))[i],
                               "zero_shot_falls_per_min": zero.get("falls_per_min", [None])[0]}
        row["metric_ratio_vs_zero_shot"], row["metric_ratio_vs_zero_shot_ci95"] = _ci(
            stats.paired_cluster_ratio_ci, eps, zero_eps)
        row["metric_minus_zero_shot"], row["metric_minus_zero_shot_ci95"] = _ci(
            stats.paired_cluster_difference_ci, eps, zero_eps)
        for name, rival in (rivals or {}).items():
            other = episode_clusters(rival, rival["minutes"].index(minutes)) if minutes in rival["minutes"] else None
            if other is None:
                continue
            row[f"metric_ratio_vs_{name}"], row[f"metric_ratio_vs_{name}_ci95"] = _ci(
                stats.paired_cluster_ratio_ci, eps, other)
            row[f"metric_minus_{name}"], row[f"metric_minus_{name}_ci95"] = _ci(
                stats.paired_cluster_difference_ci, eps, other)
        err, zero_err = res["latent_error"][i], zero["latent_error"][0]
        row["latent_error_ratio_zero_shot_over_method"] = zero_err / err if err else None
        if "latent_error_per_seed" in res and err:
            row["latent_error_ratio_per_seed"] = [z / e if e else None for z, e in
                                                  zip(zero["latent_error_per_seed"][0], res["latent_error_per_seed"][i],
                                                      strict=True)]  # fmt: skip
        rows.append(row)
    return rows


MERGE_SAME = ("task", "metric", "config", "seed_scheme", "planner", "env_overrides", "checkpoint", "compare",
              "rl_dataset", "replay_dataset")
"""Report keys that reports merged by ``--merge`` must share (``config`` except its ``seed``)."""
METHOD_SETTINGS = {"rlpd": ("config.rlpd", "rl_dataset"), "iql": ("config.iql", "rl_dataset")}
"""Report settings (dotted keys) that only the named method reads; every world-model finetuning method reads
``WORLD_MODEL_SETTINGS`` instead, and zero-shot reads neither."""
WORLD_MODEL_SETTINGS = ("config.finetune", "replay_dataset")
"""Report settings that only the world-model finetuning methods read (``METHODS`` of the benchmark)."""
_METHOD_SPECIFIC = frozenset(WORLD_MODEL_SETTINGS).union(*METHOD_SETTINGS.values())
JOIN_MAY_DIFFER = "config.minutes"
"""Reports of one seed may run their methods to different minute marks: each method's marks are in its own
results, and collection round k has the same seeds whatever the last mark is. Why: the RL baselines cost about an
hour of CPU per seed per 10 minutes of experience here, so they may stop at 10 minutes beside a 30-minute
world-model run. The joined ``config.minutes`` is the union."""
MAY_DIFFER_ON_REQUEST = ("rl_dataset", "replay_dataset")
"""Keys a merge accepts different values of when asked to (``--merge-may-differ``): where the dataset lay on the
machine that ran each seed. A dataset regenerated elsewhere with the same command has another path; the paths do not
tell whether it is the same data, so the user vouches for that, and the merged report keeps every seed's path
(``allowed_differences``)."""
PER_SEED_MEAN = ("latent_error", "probe_error", "reward_error", "reward_error_task", "reward_per_step", "falls")
"""Per-point values a merged report gives as the mean over seeds (each seed's in ``<key>_per_seed``)."""


def fill_config_defaults(reports: list[dict[str, Any]], defaults: dict[str, Any]) -> list[dict[str, Any]]:
    """Copies of ``reports`` whose ``config`` holds every key of ``defaults`` (the benchmark's config as a dict).

    Why: a report written before a config field existed lacks it, and ran with what is now its default, so it is
    the same run as a newer report that records the default. Keys a report has are kept as they are; nested
    configs are filled the same way.
    """

    def filled(config: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
        out = dict(config)
        for key, value in base.items():
            if key not in out:
                out[key] = value
            elif isinstance(value, dict) and isinstance(out[key], dict):
                out[key] = filled(out[key], value)
        return out

    return [{**r, "config": filled(r["config"], defaults)} if isinstance(r.get("config"), dict) else r
            for r in reports]  # fmt: skip


def _flatten(value: Any, prefix: str) -> dict[str, Any]:  # noqa: ANN401
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _identity(report: dict[str, Any]) -> dict[str, Any]:
    """What must be equal across merged reports, as dotted key -> value."""
    same = {key: report.get(key) for key in MERGE_SAME}
    same["config"] = {k: v for k, v in (same["config"] or {}).items() if k != "seed"}
    same["methods"] = sorted(report.get("results", {}))
    same["minutes"] = {m: res.get("minutes") for m, res in report.get("results", {}).items()}
    return _flatten(same, "")


def _settings_read(report: dict[str, Any]) -> set[str]:
    """The method-specific settings (``METHOD_SETTINGS``, ``WORLD_MODEL_SETTINGS``) that a report's methods read."""
    used: set[str] = set()
    for method in report.get("results") or {}:
        base = method.split("@")[0]
        if base != "zero_shot":
            used.update(METHOD_SETTINGS.get(base, WORLD_MODEL_SETTINGS))
    return used


def _join_differences(first: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """Dotted keys in which two reports of one seed differ, but for their minute marks and unread settings.

    Left out: the minute marks (``JOIN_MAY_DIFFER``) and settings that either one's methods do not read. Why: a
    report of the RL baselines alone records the world-model finetuning settings at whatever they were (their
    defaults), and a report of dynamics-only finetuning alone the baselines' settings; neither ran with them.
    """
    ignored = (_METHOD_SPECIFIC - (_settings_read(first) & _settings_read(other))) | {JOIN_MAY_DIFFER}
    keys = (*MERGE_SAME, "heldout_windows")
    flat_a, flat_b = (_flatten({k: r.get(k) for k in keys}, "") for r in (first, other))
    return sorted(k for k in flat_a.keys() | flat_b.keys()
                  if not any(k == u or k.startswith(u + ".") for u in ignored)
                  and flat_a.get(k, "<absent>") != flat_b.get(k, "<absent>"))  # fmt: skip


def _settings_from_users(members: list[dict[str, Any]]) -> dict[str, Any]:
    """The first report, each method-specific setting taken from the first report whose methods read it.

    Only ``config`` is copied (the settings live there and at the top level); the rest is shared with the input.
    """
    out = {**members[0], "config": copy.deepcopy(members[0].get("config") or {})}
    for setting in sorted(_METHOD_SPECIFIC):
        user = next((r for r in members if setting in _settings_read(r)), None)
        if user is None:
            continue
        *parents, leaf = setting.split(".")
        source, target = user, out
        for key in parents:
            source, target = source.get(key) or {}, target.setdefault(key, {})
        if leaf in source:
            target[leaf] = copy.deepcopy(source[leaf])
        else:
            target.pop(leaf, None)
    return out


PER_METHOD_LISTS = ("rounds",)
"""A method's lists that are not one value per evaluation point (``rounds``: one entry per finetuning round)."""
ZERO_SHOT_MUST_HAVE = ("minutes", "metric", "episode_metric")
"""Zero-shot fields both reports of a join must hold (and agree on): the episodes themselves."""


def _same_zero_shot(a: dict | None, b: dict | None) -> dict | None:
    """The joined zero-shot point of two reports of one seed, or ``None`` when they did not measure the same one.

    Every field both hold must be equal, and both must hold the episodes (``ZERO_SHOT_MUST_HAVE``). A field only
    one holds is a yardstick the benchmark added between the two runs (``reward_error_task`` was): it is kept.
    """
    if not a or not b or any(key not in a or key not in b for key in ZERO_SHOT_MUST_HAVE):
        return None
    if any(a[key] != b[key] for key in a.keys() & b.keys()):
        return None
    return {**a, **b}


def join_seed_reports(
    reports: list[dict[str, Any]], names: list[str], method_order: Sequence[str] = ()
) -> tuple[list[dict[str, Any]], list[str]]:
    """Reports of one seed that ran different methods (``--methods`` split over processes), joined into one each.

    Why: on a 2-core machine both world-model methods of three seeds take longer than the seeds of one method
    run side by side; a method can run later, in its own process, with the same seed. Reports of a seed must be
    the same run in all but their methods (and the settings that only the other report's methods read, such as
    the RL baselines' budgets and dataset: ``METHOD_SETTINGS``; the joined report takes each from the report
    whose methods read it), and their zero-shot measurements the same (``_same_zero_shot``: every field both
    hold equal, the episodes in both): the same seed measures the same zero-shot episodes, so a difference means
    they are not the same run. Their methods may stop at
    different minute marks (``JOIN_MAY_DIFFER``; comparisons pair only the marks both have). Names of joined reports
    become ``"a.json + b.json"``; reports of seeds that appear once pass through unchanged. A joined report lists
    its methods in ``method_order`` (the benchmark's ``METHOD_CHOICES``); methods it does not name follow in the
    order the reports give them.

    Raises:
        ValueError: a method that two reports of one seed both ran, or reports of one seed that differ in more
            than their methods.
    """
    groups: dict[Any, list[int]] = {}
    for i, report in enumerate(reports):
        groups.setdefault((report.get("config") or {}).get("seed"), []).append(i)
    out, out_names = [], []
    for seed, members in groups.items():
        first = reports[members[0]]
        if len(members) == 1:
            out.append(first)
            out_names.append(names[members[0]])
            continue
        results = dict(first.get("results") or {})
        for j in members[1:]:
            report, name = reports[j], names[j]
            twice = sorted((set(report.get("results") or {}) & set(results)) - {"zero_shot"})
            if twice:
                raise ValueError(f"seed {seed} appears twice ({names[members[0]]} and {name}, both with {twice}); "
                                 f"each report must be another seed, or other methods of the same seed")
            differ = _join_differences(first, report)
            zero_shot = _same_zero_shot(results.get("zero_shot"), (report.get("results") or {}).get("zero_shot"))
            if zero_shot is None:
                differ.append("results.zero_shot")
            if differ:
                raise ValueError(f"{names[members[0]]} and {name} are both seed {seed} but differ in {differ}: "
                                 f"not methods of the same run")
            results.update(report["results"])
            results["zero_shot"] = zero_shot
        order = {m: k for k, m in enumerate(method_order)}
        results = dict(sorted(results.items(), key=lambda item: order.get(item[0], len(order))))
        joined = {**_settings_from_users([reports[j] for j in members]), "results": results,
                  "summary": summarise(results),
                  "wall_s": float(sum(reports[j].get("wall_s", 0.0) for j in members)),
                  "final_checkpoints": {k: v for j in members for k, v in (reports[j].get("final_checkpoints")
                                                                            or {}).items()},
                  "joined_from": [names[j] for j in members]}  # fmt: skip
        joined["config"]["minutes"] = sorted({float(m) for j in members
                                              for m in (reports[j].get("config") or {}).get("minutes") or ()})
        out.append(joined)
        out_names.append(" + ".join(names[j] for j in members))
    return out, out_names


def check_mergeable(reports: list[dict[str, Any]], names: list[str], may_differ: Sequence[str] = ()) -> None:
    """Refuse reports that differ in anything but ``seed``, repeat a seed, or lack per-episode values.

    ``may_differ``: keys of ``MAY_DIFFER_ON_REQUEST`` whose values may differ as well.

    Raises:
        ValueError: naming every key that differs (with each file's value), the repeated seed, or the file.
    """
    if not reports:
        raise ValueError("nothing to merge")
    unknown = sorted(set(may_differ) - set(MAY_DIFFER_ON_REQUEST))
    if unknown:
        raise ValueError(f"only {list(MAY_DIFFER_ON_REQUEST)} may differ on request, not {unknown}")
    for report, name in zip(reports, names, strict=True):
        if "seeds" in report:
            raise ValueError(f"{name} is already a merged report (seeds {report['seeds']}); merge the per-seed ones")
        if not isinstance(report.get("results"), dict) or not isinstance(report.get("config"), dict):
            raise ValueError(f"{name} is not a `simdist bench adaptation` report (no results/config)")
        missing = [m for m, res in report["results"].items()
                   if any(v is None for v in res.get("episode_metric", [None]))]
        if missing:
            raise ValueError(f"{name} has no per-episode values for {missing} (written before they were recorded); "
                             f"rerun it to merge")
    seen: dict[Any, str] = {}
    for report, name in zip(reports, names, strict=True):
        seed = report["config"].get("seed")
        if seed in seen:
            raise ValueError(f"seed {seed} appears twice ({seen[seed]} and {name}); each report must be another seed")
        seen[seed] = name
    ids = [_identity(r) for r in reports]
    keys = sorted({k for i in ids for k in i})
    differ = [k for k in keys if k not in may_differ
              and any(i.get(k, "<absent>") != ids[0].get(k, "<absent>") for i in ids[1:])]  # fmt: skip
    if differ:
        detail = "; ".join(f"{k}: " + ", ".join(f"{n}={i.get(k, '<absent>')!r}"
                                                for n, i in zip(names, ids, strict=True))
                           for k in differ[:8])  # fmt: skip
        more = f" (and {len(differ) - 8} more)" if len(differ) > 8 else ""
        raise ValueError(f"the reports differ in more than seed: {detail}{more}")


def merge_reports(
    reports: list[dict[str, Any]], names: list[str], method_order: Sequence[str] = (), may_differ: Sequence[str] = ()
) -> dict[str, Any]:
    """One report from per-seed reports of the same run (see :func:`check_mergeable`), seeds in ascending order.

    Reports of one seed that ran different methods are joined first (:func:`join_seed_reports`, ``method_order``).

    Per method and minute mark: ``metric`` is the mean over all episodes of all seeds, ``metric_ci95`` its
    two-level (cluster) bootstrap interval (``stats.cluster_mean_ci``: seeds, then episodes within each),
    ``metric_per_seed`` each seed's mean, ``falls_per_min`` episodes that fell per simulated minute of
    evaluation (all seeds), ``mean_duration_s`` the pooled mean; the latent, probe, reward errors,
    ``reward_per_step`` and ``falls`` (fall events per episode) are the mean over seeds.
    ``<key>_per_seed[i]`` lists the seeds' values at mark ``i`` (in the order of ``seeds``), for every
    per-point key (``episode_metric_per_seed`` holds the per-episode values); per-method scalars
    (``final_checkpoint``, ``online_episodes``) and lists (``PER_METHOD_LISTS``) become a list over seeds.
    ``summary`` keeps the single-seed keys (from these pooled values) and adds the paired CIs.

    ``may_differ`` (see :func:`check_mergeable`): each such key that differs is kept per report in
    ``allowed_differences`` (report name -> value).

    Raises:
        ValueError: see :func:`join_seed_reports` and :func:`check_mergeable`.
    """
    reports, names = join_seed_reports(reports, names, method_order)
    check_mergeable(reports, names, may_differ)
    order = sorted(range(len(reports)), key=lambda j: reports[j]["config"]["seed"])
    reports, names = [reports[j] for j in order], [names[j] for j in order]
    first = reports[0]
    results: dict[str, Any] = {}
    for method, res0 in first["results"].items():
        runs = [r["results"][method] for r in reports]
        n = len(res0["minutes"])
        out: dict[str, Any] = {"minutes": list(res0["minutes"])}
        for key in res0:
            if key == "minutes":
                continue
            values = [run.get(key) for run in runs]
            if key not in PER_METHOD_LISTS and all(isinstance(v, list) and len(v) == n for v in values):
                out[f"{key}_per_seed"] = [[v[i] for v in values] for i in range(n)]
            else:
                out[f"{key}_per_seed"] = values
        out["metric"], out["metric_ci95"], out["falls_per_min"] = [], [], []
        for key in ("mean_duration_s", *PER_SEED_MEAN):
            out[key] = []
        for i in range(n):
            clusters = out["episode_metric_per_seed"][i]
            mean, low, high = stats.cluster_mean_ci(clusters)
            out["metric"].append(mean)
            out["metric_ci95"].append([low, high])
            fell = out["episode_fell_per_seed"][i]
            durations = [d for seed_d in out["episode_duration_s_per_seed"][i] for d in seed_d]
            out["falls_per_min"].append(falls_per_minute(None if any(f is None for f in fell) else
                                                         [f for seed_f in fell for f in seed_f], durations))
            out["mean_duration_s"].append(float(np.mean(durations)) if durations else None)
            for key in PER_SEED_MEAN:
                per_seed = out.get(f"{key}_per_seed", [[None]] * n)[i]
                out[key].append(None if any(v is None for v in per_seed) else float(np.mean(per_seed)))
        results[method] = out
    config = {k: v for k, v in first["config"].items() if k != "seed"}
    merged = {"task": first["task"], "metric": first["metric"], "seeds": [r["config"]["seed"] for r in reports],
              "results": results, "summary": summarise(results), "config": config,
              **{k: first[k] for k in MERGE_SAME[3:] if k in first},
              "heldout_windows_per_seed": [r.get("heldout_windows") for r in reports],
              "wall_s": float(sum(r.get("wall_s", 0.0) for r in reports)),
              "wall_s_per_seed": [r.get("wall_s") for r in reports],
              "final_checkpoints_per_seed": [r.get("final_checkpoints", {}) for r in reports],
              "merged_from": names}  # fmt: skip
    allowed = {key: {name: r.get(key) for name, r in zip(names, reports, strict=True)} for key in may_differ
               if len({json.dumps(r.get(key)) for r in reports}) > 1}  # fmt: skip
    if allowed:
        merged["allowed_differences"] = allowed
    return merged


def plot(report: dict[str, Any], path: Path) -> None:
    """Task metric and held-out latent error vs minutes of experience, one line per method.

    Error bars on the metric panel: the 95 % interval of each point (``metric_ci95``; reports written before
    it was recorded have none). A merged report draws the latent, probe and reward errors as the mean over
    seeds with bars from the smallest to the largest seed's value.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    zero = report["results"]["zero_shot"]
    # The reward head's error in task units where the report has it (comparable across checkpoints), else its
    # training loss in the head's own normalised units (reports written before the task-unit error existed).
    reward_key = "reward_error_task" if zero.get("reward_error_task", [None])[0] is not None else "reward_error"
    keys = [k for k in ("metric", "latent_error", "probe_error", reward_key, "reward_per_step")
            if zero.get(k, [None])[0] is not None]  # fmt: skip
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 4))
    last = max(max(r["minutes"]) for r in report["results"].values())
    for j, (method, res) in enumerate(report["results"].items()):
        dodge = (j - (len(report["results"]) - 1) / 2) * 0.006 * last  # bars of methods side by side, not on top
        flat = method.split("@")[0] == "zero_shot"
        xs = [0.0, last] if flat else res["minutes"]
        for ax, key in zip(axes, keys, strict=True):
            ys = [float("nan") if v is None else v for v in ([res[key][0]] * 2 if flat else res[key])]
            line = ax.plot(xs, ys, "--" if flat else "-o", label=method)[0]
            bars = _error_bars(res, key)
            if bars is not None:
                n = 1 if flat else len(res["minutes"])
                ax.errorbar([x + dodge for x in xs[:n]], ys[:n], yerr=bars[:, :n], fmt="none", ecolor=line.get_color(),
                            capsize=3, alpha=0.8)
    seeds = report.get("seeds")
    has_ci = any(res.get("metric_ci95") for res in report["results"].values())
    axes[0].set_ylabel(report["metric"] + (f"\nmean, 95 % CI ({len(seeds)} seeds x episodes)" if seeds
                                           else "\nmean, 95 % CI over episodes" if has_ci else ""))
    axes[1].set_ylabel("held-out latent error (MSE)" + (f"\nmean, min-max of {len(seeds)} seeds" if seeds else ""))
    labels = {"probe_error": "held-out probe error (MSE, physical units)",
              "reward_error": "held-out reward-head error\n(Huber, each head's normalised units)",
              "reward_error_task": "held-out reward-head error (MSE, task units)",
              "reward_per_step": "true reward per step in evaluation (sim)"}  # fmt: skip
    for ax, key in zip(axes[2:], keys[2:], strict=True):
        ax.set_ylabel(labels[key])
    for ax in axes:
        ax.set_xlabel("minutes of experience in the shifted task")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"adaptation on {report['task']}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _error_bars(res: dict[str, Any], key: str) -> np.ndarray | None:
    """(2, points) distances below/above each point: the metric's CI, or the min/max over seeds of an error."""
    if key == "metric" and res.get("metric_ci95"):
        lows_highs = res["metric_ci95"]
    elif key != "metric" and f"{key}_per_seed" in res:
        lows_highs = [None if any(v is None for v in seeds) else [min(seeds), max(seeds)]
                      for seeds in res[f"{key}_per_seed"]]  # fmt: skip
    else:
        return None
    out = np.zeros((2, len(lows_highs)))
    for i, (value, bounds) in enumerate(zip(res[key], lows_highs, strict=True)):
        if value is not None and bounds is not None:
            out[:, i] = [max(value - bounds[0], 0.0), max(bounds[1] - value, 0.0)]
    return out
