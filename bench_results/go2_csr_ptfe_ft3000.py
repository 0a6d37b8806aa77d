"""Reading of ``GO2_CSR_PTFE_LONGER_FT.md``: PTFE adaptation with 3,000 finetuning updates per round.

Reads the three 3,000-update models' runs on the 60 new episodes (``bench_results/go2_csr_ptfe_ft3000/``), the
zero-shot and 300-update runs on the same episodes (``bench_results/go2_csr_ptfe_confirm/``) and the two benchmark
reports, and writes ``bench_results/go2_csr_ptfe_ft3000.json``. ``read_longer_finetune`` is shared with the same
reading of the capped-recipe model (``go2_cr_ptfe_ft3000.py``). Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_ft3000.py``.
"""

import json
from pathlib import Path

from eval_arms import falls_within_2s, gain_verdict, minus, ratio_of_pooled_means, rounded_difference
from simdist_core.eval.stats import episode_summary, episode_values

TASK = "go2/ptfe_slope"
SEEDS = (0, 1, 2)
READ_AT_30 = ("metric", "metric_ci95", "metric_ratio_vs_zero_shot", "metric_ratio_vs_zero_shot_ci95",
              "metric_minus_zero_shot", "metric_minus_zero_shot_ci95", "falls_per_min", "zero_shot_falls_per_min",
              "latent_error_ratio_zero_shot_over_method")  # fmt: skip


def dynamics_only_at(bench: dict, minutes: tuple[float, ...] = (10.0, 30.0)) -> dict:
    """A merged benchmark's dynamics-only readings (``READ_AT_30`` keys) at each of ``minutes``."""
    rows = {r["minutes"]: r for r in bench["summary"]["dynamics_only"]["by_minute"]}
    return {f"at_{int(m)}_min": {key: rows[m][key] for key in READ_AT_30} for m in minutes}


def load_plain(path: Path, episodes: int) -> dict:
    """One ``simdist eval --json`` report of the plain planner (cpu preset, tie 0, terminal value on), checked."""
    report = json.loads(path.read_text())
    if (
        report["task"] != TASK
        or report["episodes"] != episodes
        or report["preset"] != "cpu"
        or report["planner"]["prior_weight"] != 0.0
        or report["planner"]["terminal_value"] is not True
        or report["torch_threads"] != 1
        or not report.get("heading_hold", False)
        or report["env_overrides"] != {}
    ):
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def _pooled(diffs: list[list[float]]) -> dict:
    return rounded_difference(diffs, [[0.0] * len(diffs[0])] * len(diffs))


def _bench(stem_3000: str, stem_300: str) -> dict:
    """The merged 3,000-update benchmark's readings at 30 minutes, and its 30-minute episodes against 300 updates."""
    new, old = (json.loads(Path(f"bench_results/{stem}.json").read_text()) for stem in (stem_3000, stem_300))
    if new["config"]["finetune"]["steps"] != 3000 or old["config"]["finetune"]["steps"] != 300:
        raise SystemExit("benchmark reports: not the protocol's finetune settings")
    by_minute = new["summary"]["dynamics_only"]["by_minute"]

    def thirty_minute_episodes(stem: str) -> list[list[float]]:
        runs = []
        for k in SEEDS:
            dyn = json.loads(Path(f"bench_results/{stem}_seed{k}.json").read_text())["results"]["dynamics_only"]
            runs.append(dyn["episode_metric"][dyn["minutes"].index(30.0)])
        return runs

    return {
        "at_30_min": {key: next(r for r in by_minute if r["minutes"] == 30.0)[key] for key in READ_AT_30},
        "at_10_min_metric": next(r for r in by_minute if r["minutes"] == 10.0)["metric"],
        "zero_shot_metric": by_minute[0]["metric"],
        "ft3000_minus_ft300_at_30_min_same_episodes": rounded_difference(
            thirty_minute_episodes(stem_3000), thirty_minute_episodes(stem_300)
        ),
    }


def read_longer_finetune(zero: dict, ft300: list[dict], ft3000: list[dict], stem_3000: str, stem_300: str) -> dict:
    """The protocols' readings of 3,000-update models, paired and pooled over the benchmark seeds.

    Against zero-shot (the primary verdict) and against the 300-update models, then the benchmarks' readings.
    """
    zero_values = episode_values(zero["per_episode"], TASK)
    rows, vs_zero, vs_300 = {}, [], []
    for k, (report, old_report) in enumerate(zip(ft3000, ft300, strict=True)):
        values = episode_values(report["per_episode"], TASK)
        old = episode_values(old_report["per_episode"], TASK)
        rows[f"ft3000_seed{k}"] = {
            **episode_summary(report["per_episode"], TASK),
            "fell_within_2s": falls_within_2s(report),
            "minus_zero_shot": rounded_difference([values], [zero_values]),
            "minus_ft300_same_seed": rounded_difference([values], [old]),
        }
        rows[f"ft300_seed{k}"] = {**episode_summary(old_report["per_episode"], TASK),
                                  "fell_within_2s": falls_within_2s(old_report)}  # fmt: skip
        vs_zero.append(minus(values, zero_values))
        vs_300.append(minus(values, old))
    pooled = _pooled(vs_zero)
    ratio = ratio_of_pooled_means(vs_zero, zero_values)
    verdict = gain_verdict(pooled, ratio, "with one pass over the experience the adaptation wins on PTFE",
                           "walks further, short of 1.5x", "walks less", "not told apart")
    more = _pooled(vs_300)
    return {
        "zero_shot": {**episode_summary(zero["per_episode"], TASK), "fell_within_2s": falls_within_2s(zero)},
        **rows,
        "pooled_minus_zero_shot": pooled,
        "ratio_of_pooled_means": ratio,
        "primary_verdict": verdict,
        "pooled_ft3000_minus_ft300": more,
        "more_updates": "help" if more["ci95"][0] > 0 else "hurt" if more["ci95"][1] < 0 else "not told apart",
        "benchmark": _bench(stem_3000, stem_300),
    }


def write_reading(name: str, protocol: str, seeds: list[int], zero: Path, ft300: list[Path], ft3000: list[Path],
                  stems: tuple[str, str]) -> None:
    """Check and read one protocol's runs and write ``bench_results/<name>.json``.

    ``zero``, ``ft300``, ``ft3000``: the evaluation reports; ``stems``: the benchmarks of 3,000 and of 300 updates.
    """
    episodes = seeds[1] - seeds[0] + 1
    out = {"protocol": protocol, "seeds": seeds,
           **read_longer_finetune(load_plain(zero, episodes), [load_plain(p, episodes) for p in ft300],
                                  [load_plain(p, episodes) for p in ft3000], *stems)}  # fmt: skip
    Path(f"bench_results/{name}.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


def main() -> None:
    """The relabelled-with-replay model on the 60 new episodes of ``GO2_CSR_PTFE_CONFIRM.md``."""
    confirm, new = Path("bench_results/go2_csr_ptfe_confirm"), Path("bench_results/go2_csr_ptfe_ft3000")
    write_reading("go2_csr_ptfe_ft3000", "bench_results/GO2_CSR_PTFE_LONGER_FT.md", [66000, 66059],
                  confirm / "zero_shot_plain.json", [confirm / f"adapted_seed{k}_plain.json" for k in SEEDS],
                  [new / f"adapted_seed{k}_plain.json" for k in SEEDS],
                  ("adaptation_go2_csr_ptfe_ft3000", "adaptation_go2_csr_ptfe_plain"))  # fmt: skip


if __name__ == "__main__":
    main()
