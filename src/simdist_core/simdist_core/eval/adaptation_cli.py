"""``simdist bench adaptation``: zero-shot vs dynamics-only (SimDist) vs full finetuning in a shifted task.

The command line of :mod:`simdist_core.eval.adaptation` (the benchmark) and
:mod:`simdist_core.eval.adaptation_report` (its reports): run one seed, several seeds in one process
(``--seeds``), or merge finished per-seed reports (``--merge``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Any

import torch

from simdist_core.cliargs import (
    ArgumentParser,
    UsageError,
    check_choice,
    check_existing_path,
    check_list,
    check_positive,
    checkpoint_dir,
    cli_main,
)
from simdist_core.config import apply_cli_overrides, parse_overrides, to_dict
from simdist_core.data.dataset import check_dataset
from simdist_core.eval.adaptation import METHOD_CHOICES, RL_METHODS, AdaptationConfig, Benchmark
from simdist_core.eval.adaptation_report import (
    MAY_DIFFER_ON_REQUEST,
    check_mergeable,
    fill_config_defaults,
    join_seed_reports,
    merge_reports,
    plot,
)
from simdist_core.eval.closed_loop import json_default

log = logging.getLogger(__name__)


def _task_keys_help(ns: argparse.Namespace) -> str:
    from simdist_core.config_show import task_keys_text

    return task_keys_text(ns.task, "--env")


def _planner_keys_help(_ns: argparse.Namespace) -> str:
    from simdist_core.config_show import describe

    return describe(f"planner/{AdaptationConfig().preset}") + "\n(the preset is --set preset=NAME)"


def _config_keys_help(_ns: argparse.Namespace) -> str:
    from simdist_core.config_show import describe

    return describe("adaptation")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist bench adaptation", description=__doc__.splitlines()[0],
                            key_help={"--set": _config_keys_help, "--env": _task_keys_help,
                                      "--planner": _planner_keys_help})
    parser.add_argument("--task", default="go2/ptfe_slope", help="the shifted task")
    parser.add_argument("--checkpoint", type=Path, help="pretrained checkpoint (default: checkpoints/<robot>)")
    parser.add_argument("--minutes", default="0,1,2,4", help="cumulative minutes of experience, e.g. 0,5,10,20,30")
    parser.add_argument("--methods", default="dynamics_only,full_finetune",
                        help=f"comma list of: {', '.join(METHOD_CHOICES)} (zero_shot is always measured; "
                             "dynamics_reward also fits the reward head to the simulator's reward, "
                             "dynamics_reward_encoded fits it on encoded latents only: experiments, not the method)")
    parser.add_argument("--data", type=Path,
                        help="pretraining dataset of the RL baselines, and the simulation data replayed into "
                             "finetuning with --set finetune.replay_fraction=F (default: the checkpoint's provenance)")
    parser.add_argument("--compare", action="append", default=[], metavar="LABEL=PATH",
                        help="also run the world-model methods from this checkpoint, reported as METHOD@LABEL "
                             "(e.g. expert_only=checkpoints/go2_expert_only)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="AdaptationConfig override, e.g. eval_episodes=2, finetune.steps=200 "
                             "(`--set help` lists the keys)")  # fmt: skip
    parser.add_argument("--env", dest="env_set", action="append", default=[], metavar="KEY=VALUE",
                        help="task override (`--env help` lists the task's keys)")
    parser.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                        help="planner override (`--planner help` lists the keys)")
    parser.add_argument("--workdir", type=Path, help="where experience is stored (default: next to --json)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seeds", metavar="S1,S2,...",
                        help="run the whole benchmark once per seed, one after the other in this process (experience "
                             "in <workdir>/seed-S, each report in <workdir>/seed-S/report.json), then merge them "
                             "into --json; on a few cores, run the seeds as separate processes and --merge instead")
    parser.add_argument("--merge", nargs="+", type=Path, metavar="REPORT.json",
                        help="merge finished reports of the same run that differ only in seed (--set seed=S) into "
                             "--json (pooled means, 95 %% CIs over seeds and episodes, per-seed values); reports of "
                             "one seed that ran other --methods are joined first (settings that only the other "
                             "report's methods read, such as --set rlpd.* or --data for the RL baselines, may "
                             "differ, and so may --minutes); runs nothing and takes only --json and --plot")
    parser.add_argument("--merge-may-differ", action="append", default=[], choices=MAY_DIFFER_ON_REQUEST,
                        metavar="KEY", help="with --merge: accept reports whose KEY differs (%(choices)s: the path of "
                        "the dataset a seed read; a dataset regenerated elsewhere with the same command has another "
                        "one); the merged report keeps each report's value under allowed_differences")
    parser.add_argument("--json", type=Path, required=True, help="write the report here")
    parser.add_argument("--plot", type=Path, help="also draw the curves into this PNG")
    return parser.parse_args(argv)


RUN_OPTIONS = {"task": "--task", "checkpoint": "--checkpoint", "minutes": "--minutes", "methods": "--methods",
               "data": "--data", "compare": "--compare", "overrides": "--set", "env_set": "--env",
               "planner_set": "--planner", "workdir": "--workdir", "seeds": "--seeds"}  # fmt: skip
"""Options that configure a run (``--merge`` refuses them: it runs nothing)."""


def parse_seeds(text: str | None, overrides: list[str]) -> tuple[int, ...] | None:
    """``--seeds`` as distinct non-negative ints (None without it).

    Raises:
        UsageError: not a comma list of distinct integers >= 0, or given together with ``--set seed=``.
    """
    if text is None:
        return None
    try:
        seeds = tuple(int(item) for item in text.split(",") if item.strip())
    except ValueError:
        raise UsageError(f"--seeds {text!r}: expected a comma list of integers, e.g. 0,1,2") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds {text!r}: expected distinct integers >= 0, e.g. 0,1,2")
    if any(o.split("=", 1)[0].strip() == "seed" for o in overrides):
        raise UsageError("--seeds and --set seed=... both set the seed; give one of them")
    return seeds


def load_merge_inputs(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    """The reports ``--merge`` names, checked (``check_mergeable``) before anything is written.

    Raises:
        UsageError: a run option given with ``--merge``, a missing or unreadable file, ``--json`` naming an
            input, or reports that cannot be merged (what differs is named).
    """
    defaults = vars(_parse(["--json", "x"]))
    given = [flag for key, flag in RUN_OPTIONS.items() if getattr(args, key) != defaults[key]]
    if given:
        raise UsageError(f"--merge combines finished reports and takes only --json and --plot; drop {', '.join(given)}")
    reports, names = [], []
    for path in args.merge:
        check_existing_path("--merge", path)
        if path.resolve() == args.json.resolve():
            raise UsageError(f"--json {str(args.json)!r} is also a --merge input; write the merged report elsewhere")
        try:
            reports.append(json.loads(path.read_text()))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"--merge {str(path)!r} is not a readable JSON report ({exc})") from None
        names.append(str(path))
    if len(reports) < 2:
        raise UsageError("--merge needs at least 2 reports (one per seed, or per method of a seed)")
    reports = fill_config_defaults(reports, to_dict(AdaptationConfig()))  # keys added since a report was written
    try:
        check_mergeable(*join_seed_reports(reports, names, METHOD_CHOICES), tuple(args.merge_may_differ))
    except ValueError as exc:
        raise UsageError(f"--merge: {exc}") from None
    return reports, names


def validate(args: argparse.Namespace) -> tuple[AdaptationConfig, tuple[str, ...], Path, Path]:
    """Config, methods, checkpoint and workdir, checked before anything is loaded or written.

    Raises:
        UsageError: a bad task, method, ``--minutes``, ``--set``/``--env``/``--planner`` key or value,
            a missing checkpoint, ``--compare`` checkpoint or RL dataset, or a workdir that holds something.
    """
    from simdist_core.planning.mppi import PRESETS, planner_preset
    from simdist_core.sim.base import task_config

    check_positive("--threads", args.threads)
    parse_seeds(args.seeds, args.overrides)
    methods = tuple(check_list("--methods", args.methods, METHOD_CHOICES))
    overrides = parse_overrides(args.overrides)
    overrides["task"], overrides["minutes"] = args.task, args.minutes
    cfg = apply_cli_overrides(AdaptationConfig(), overrides)
    try:
        task_config(cfg.task, parse_overrides(args.env_set))
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    check_choice("--set preset", cfg.preset, sorted(PRESETS))
    apply_cli_overrides(planner_preset(cfg.preset), args.planner_set)
    checkpoint = args.checkpoint or Path(__file__).resolve().parents[4] / "checkpoints" / cfg.task.split("/")[0]
    checkpoint_dir("--checkpoint", checkpoint)
    for label, path in compare_checkpoints(args.compare).items():
        checkpoint_dir(f"--compare {label}", path)
    if any(m in RL_METHODS for m in methods) or cfg.finetune.replay_fraction:
        args.data = check_dataset("--data", rl_dataset(args.data, checkpoint), cfg.task.split("/")[0])
    workdir = args.workdir or args.json.with_name(args.json.stem + "_work")
    if workdir.exists() and any(workdir.iterdir()):
        raise UsageError(f"--workdir {str(workdir)!r} is not empty; pass a fresh --workdir")
    return cfg, methods, checkpoint, workdir


def compare_checkpoints(pairs: list[str]) -> dict[str, Path]:
    """``--compare LABEL=PATH`` flags as label -> checkpoint folder.

    Raises:
        UsageError: a malformed pair or a repeated label.
    """
    out: dict[str, Path] = {}
    for pair in pairs:
        label, sep, path = pair.partition("=")
        if not sep or not label or not path or "@" in label or label in out:
            raise UsageError(f"--compare {pair!r}: expected LABEL=PATH with a new label without '@'")
        out[label] = Path(path)
    return out


def rl_dataset(data: Path | None, checkpoint: Path) -> Path:
    """``--data``, else the pretraining dataset the checkpoint's manifest records.

    Raises:
        UsageError: neither is given / the recorded one is not on this machine.
    """
    if data is not None:
        return data
    manifest = checkpoint / "manifest.json"
    recorded = json.loads(manifest.read_text()).get("extra", {}).get("provenance", {}).get("dataset") \
        if manifest.is_file() else None
    if not recorded or not Path(recorded).is_dir():
        raise UsageError(f"rlpd/iql and finetune.replay_fraction need the pretraining dataset: pass --data (the "
                         f"checkpoint records {recorded!r}, which is not here; `simdist generate` with its "
                         "dataset_info rebuilds it)")
    return Path(recorded)


@cli_main("simdist bench adaptation")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench adaptation``."""
    args = _parse(argv)
    if args.merge:
        reports, names = load_merge_inputs(args)
        return _write(args, merge_reports(reports, names, METHOD_CHOICES, tuple(args.merge_may_differ)))
    if args.merge_may_differ:
        raise UsageError("--merge-may-differ applies to --merge only")
    cfg, methods, checkpoint, workdir = validate(args)
    seeds = parse_seeds(args.seeds, args.overrides)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    from simdist_core.checkpoint import load_for_cli

    model, _ = load_for_cli("--checkpoint", checkpoint)
    if model.spec.name != cfg.task.split("/")[0]:
        raise UsageError(f"--task {cfg.task!r} is not a task of --checkpoint {str(checkpoint)!r} ({model.spec.name})")
    compare = {}
    for label, path in compare_checkpoints(args.compare).items():
        compare[label], _ = load_for_cli(f"--compare {label}", path)
        if compare[label].spec.name != model.spec.name:
            raise UsageError(f"--compare {label}: a {compare[label].spec.name} checkpoint, not {model.spec.name}")
    if seeds is None:
        return _write(args, _run(args, cfg, methods, checkpoint, workdir, model, compare))
    reports, names = [], []
    for seed in seeds:
        log.info("--seeds: seed %d (%d/%d)", seed, len(reports) + 1, len(seeds))
        seed_dir = workdir / f"seed-{seed}"
        report = _run(args, dataclasses.replace(cfg, seed=seed), methods, checkpoint, seed_dir, model, compare)
        names.append(str(seed_dir / "report.json"))
        Path(names[-1]).write_text(json.dumps(report, indent=1, default=json_default))
        reports.append(json.loads(Path(names[-1]).read_text()))  # as --merge reads it
    return _write(args, merge_reports(reports, names, METHOD_CHOICES))


def _run(args: argparse.Namespace, cfg: AdaptationConfig, methods: tuple[str, ...], checkpoint: Path, workdir: Path,
         model: torch.nn.Module, compare: dict[str, torch.nn.Module]) -> dict[str, Any]:  # fmt: skip
    """One benchmark run (one seed) as its report."""
    compare_paths = compare_checkpoints(args.compare)
    bench = Benchmark(model, cfg, workdir, parse_overrides(args.env_set), parse_overrides(args.planner_set),
                      offline_data=args.data if any(m in RL_METHODS for m in methods) else None,
                      parents={"": checkpoint, **compare_paths},
                      replay_data=args.data if cfg.finetune.replay_fraction else None)  # fmt: skip
    report = bench.run(methods, compare)
    report["checkpoint"] = str(checkpoint)
    report["compare"] = {label: str(path) for label, path in compare_paths.items()}
    if bench.offline_data is not None:
        report["rl_dataset"] = str(bench.offline_data)
    if cfg.finetune.replay_fraction:
        report["replay_dataset"] = str(args.data)
    return report


def _write(args: argparse.Namespace, report: dict[str, Any]) -> int:
    """Write the report (and plot), print its table; the exit status."""
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, default=json_default))
    if args.plot:
        plot(report, args.plot)
    _print_table(report)
    return 0


def _print_table(report: dict[str, Any]) -> None:
    seeds = report.get("seeds")
    if seeds:
        print(f"seeds {', '.join(map(str, seeds))}: metric = mean over all their episodes, 95 % CI over seeds and "
              f"episodes; errors = mean over seeds")
    print(f"{'method':<24} {'minutes':>8} {report['metric']:>20} {'95% CI':>18} {'latent_error':>14} "
          f"{'probe_error':>12} {'reward_error':>13} {'reward_err_task':>16} {'reward/step':>12}")  # fmt: skip
    for method, res in report["results"].items():
        nan = [float("nan")] * len(res["minutes"])
        keys = ("latent_error", "probe_error", "reward_error", "reward_error_task", "reward_per_step")
        cols = [[float("nan") if v is None else v for v in res.get(key, nan)] for key in keys]
        cis = [f"[{c[0]:.3f}, {c[1]:.3f}]" if c else "" for c in res.get("metric_ci95", [None] * len(res["minutes"]))]
        rows = zip(res["minutes"], res["metric"], cis, *cols, strict=True)
        for m, v, c, e, p, r, t, g in rows:
            print(f"{method:<24} {m:>8.2f} {v:>20.3f} {c:>18} {e:>14.5f} {p:>12.5f} {r:>13.5f} {t:>16.5f} {g:>12.3f}")
    print(f"wall time {report['wall_s']:.0f} s" + (" (all seeds together)" if seeds else ""))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
