"""``simdist config show NAME``: every key ``--set`` can override, with its type, default and docstring.

Names are the task ids (``go2/foam``: what ``simdist eval --set``, ``simdist generate --set`` and
``simdist bench adaptation --env`` override), the planner presets (``planner/cpu``: ``--planner``),
and the commands with a config of their own (``pretrain``, ``finetune``, ``adaptation``, ``generate``).
The same tables answer ``--set help`` on each command.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from simdist_core.cliargs import ArgumentParser, UsageError, check_choice, cli_main
from simdist_core.config import KeyInfo, config_keys, format_keys

GENERATE_FLAG_FIELDS = ("robot", "task", "steps", "seed", "num_shards", "env_overrides")
"""``GenerateConfig`` fields that ``simdist generate`` sets from its own flags, not from ``--set data.*``."""


def _pretrain() -> Any:  # noqa: ANN401
    from simdist_core.training.pretrain import PretrainConfig

    return PretrainConfig()


def _finetune() -> Any:  # noqa: ANN401
    from simdist_core.training.adapt import FinetuneConfig

    return FinetuneConfig()


def _adaptation() -> Any:  # noqa: ANN401
    from simdist_core.eval.adaptation import AdaptationConfig

    return AdaptationConfig()


def command_configs() -> dict[str, tuple[Callable[[], Any], str]]:
    """Config name -> (default config builder, what overrides it). Imports stay lazy (torch)."""
    return {
        "pretrain": (_pretrain, "simdist pretrain --set KEY=VALUE"),
        "finetune": (_finetune, "simdist finetune --set KEY=VALUE"),
        "adaptation": (_adaptation, "simdist bench adaptation --set KEY=VALUE"),
    }


def planner_keys(preset: str) -> list[KeyInfo]:
    """The ``--planner`` keys with the defaults of ``preset``.

    Raises:
        UsageError: unknown preset.
    """
    from simdist_core.planning.mppi import PRESETS

    return config_keys(PRESETS[check_choice("planner preset", preset, sorted(PRESETS))])


def generate_keys() -> list[KeyInfo]:
    """The ``--set data.KEY=VALUE`` keys of ``simdist generate`` (those its own flags do not set)."""
    from simdist_core.data.generate import GenerateConfig

    cfg = GenerateConfig(robot="go2", task="pretrain", steps=1)  # placeholders for the flag-owned fields
    return [KeyInfo(key="data." + k.key, type=k.type, default=k.default, doc=k.doc)
            for k in config_keys(cfg) if k.key.split(".")[0] not in GENERATE_FLAG_FIELDS]


def task_keys_text(task: str | None, option: str = "--set") -> str:
    """The table of a task's keys, or, without a task, the list of tasks to pick one from."""
    from simdist_core.sim.base import task_config, task_ids

    if not task:
        return f"{option} keys depend on the task; give --task (one of: {', '.join(task_ids())})"
    try:
        cfg = task_config(task)
    except KeyError as exc:
        raise UsageError(str(exc)) from None
    return format_keys(config_keys(cfg), f"{option} keys of task {task} (type, default, meaning):")


def names() -> list[str]:
    """Every name ``simdist config show`` knows."""
    from simdist_core.planning.mppi import PRESETS
    from simdist_core.sim.base import task_ids

    return [*task_ids(), *(f"planner/{p}" for p in sorted(PRESETS)), *command_configs(), "generate"]


def keys(name: str) -> tuple[str, list[KeyInfo]]:
    """(heading, keys) of ``name`` (see the module docstring).

    Raises:
        UsageError: unknown name (lists the valid ones, suggests the closest).
    """
    from simdist_core.sim.base import task_config

    check_choice("config name", name, names())
    if name.startswith("planner/"):
        preset = name.split("/", 1)[1]
        return f"simdist eval --preset {preset} --planner KEY=VALUE:", planner_keys(preset)
    if name == "generate":
        return "simdist generate --set data.KEY=VALUE (other --set keys go to the task):", generate_keys()
    commands = command_configs()
    if name in commands:
        build, usage = commands[name]
        return f"{usage}:", config_keys(build())
    return f"--set keys of task {name} (type, default, meaning):", config_keys(task_config(name))


def describe(name: str) -> str:
    """The key table of ``name``: one row per key (type, default) and its docstring under it.

    Raises:
        UsageError: unknown name.
    """
    heading, rows = keys(name)
    return format_keys(rows, heading)


def _parse(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(prog="simdist config show", description=__doc__.split("\n\n")[0])
    p.add_argument("name", nargs="?", help="a task id, planner/<preset>, pretrain, finetune, adaptation or "
                                           "generate; omitted: list the names")
    return p.parse_args(argv)


@cli_main("simdist config show")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist config show``."""
    args = _parse(argv)
    if args.name is None:
        print("names: " + ", ".join(names()))
        return 0
    print(describe(args.name))
    return 0
