"""What every ``simdist`` subcommand shares on its command line: one-line errors, "did you mean", defaults in --help.

The contract (tested for every subcommand): bad input is answered *before any work starts* with one
line on stderr that names the bad value, the valid choices and the closest valid one, exit status 2,
no traceback and nothing written to disk. Subcommands build their parser with :class:`ArgumentParser`
(argparse, with defaults shown in ``--help`` and choice errors that suggest), raise :class:`UsageError`
for what argparse cannot check (task ids, config keys, comma lists, paths) and wrap their entry point
in :func:`cli_main`, which turns a ``UsageError`` into that one line.

No ROS, torch or MuJoCo imports here: the dispatcher and every subcommand import this module first.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

EXIT_USAGE = 2
"""Exit status of a command refused for bad input (argparse's own convention)."""


class UsageError(ValueError):
    """Bad command-line input; ``str(exc)`` is the one line shown to the user (no traceback)."""


def one_line(text: str) -> str:
    """``text`` on one line: library messages sometimes span several, the contract is one."""
    return " ".join(str(text).split())


def closest(value: object, choices: Iterable[object]) -> str | None:
    """The valid choice closest to ``value`` (``difflib``), or None if none is close."""
    matches = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(value: object, choices: Iterable[object]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""`` when nothing is close."""
    best = closest(value, choices)
    return f"; did you mean {best!r}?" if best is not None else ""


def choice_error(what: str, value: object, choices: Iterable[object], noun: str = "valid") -> UsageError:
    """The standard refusal: ``--task 'go2/nope' is not valid; valid: a, b; did you mean 'a'?``.

    ``noun`` completes "is not ...", e.g. ``"a go2 task"``.
    """
    valid = [str(c) for c in choices]
    return UsageError(f"{what} {str(value)!r} is not {noun}; valid: {', '.join(valid)}{did_you_mean(value, valid)}")


def check_choice(what: str, value: str, choices: Iterable[str], noun: str = "valid") -> str:
    """``value`` if it is one of ``choices``.

    Raises:
        UsageError: it is not (see :func:`choice_error`).
    """
    valid = list(choices)
    if value not in valid:
        raise choice_error(what, value, valid, noun)
    return value


def check_list(what: str, text: str, choices: Iterable[str]) -> list[str]:
    """The items of a comma list, each one of ``choices``; at least one item.

    Raises:
        UsageError: an empty list or an item that is not valid (named, with the closest choice).
    """
    valid = list(choices)
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UsageError(f"{what} {text!r} is empty; give a comma list of: {', '.join(valid)}")
    for item in items:
        check_choice(f"{what} item", item, valid)
    return items


def check_positive(what: str, value: float, *, allow_zero: bool = False) -> float:
    """``value`` if > 0 (or >= 0 with ``allow_zero``).

    Raises:
        UsageError: naming the option and the value.
    """
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{what} {value:g} must be {'>= 0' if allow_zero else '> 0'}")
    return value


def check_new_path(what: str, path: Path) -> Path:
    """``path`` if nothing exists there yet (outputs that are never overwritten).

    Raises:
        UsageError: something does.
    """
    if path.exists():
        raise UsageError(f"{what} {str(path)!r} already exists; outputs are never overwritten, pick a new path")
    return path


def check_existing_path(what: str, path: Path, *, marker: str | None = None, kind: str = "path") -> Path:
    """``path`` if it exists (and holds ``marker``, e.g. ``manifest.json`` for a checkpoint).

    Raises:
        UsageError: naming the option and the path.
    """
    if not path.exists():
        raise UsageError(f"{what} {str(path)!r} does not exist")
    if marker is not None and not (path / marker).is_file():
        raise UsageError(f"{what} {str(path)!r} is not a {kind} (no {marker} in it)")
    return path


def checkpoint_dir(what: str, path: Path) -> Path:
    """A checkpoint directory given on the command line (a folder with ``manifest.json``).

    Raises:
        UsageError: missing, or not a checkpoint.
    """
    return check_existing_path(what, path, marker="manifest.json", kind="checkpoint")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, except where there is none worth showing (None, flags, [])."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0:
            return action.help
        return super()._get_help_string(action)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the ``simdist`` contract: one-line errors that suggest the closest valid choice.

    ``key_help`` maps an option that takes ``KEY=VALUE`` pairs (``--set``) to a function that returns
    the table of its keys: ``--set help`` prints that table and exits 0, even without the command's
    required options (which the table may use when they are given, e.g. ``--task``).
    """

    def __init__(self, *args: Any, key_help: dict[str, Callable[[argparse.Namespace], str]] | None = None,  # noqa: ANN401
                 **kwargs: Any) -> None:  # noqa: ANN401
        kwargs.setdefault("formatter_class", HelpFormatter)
        if kwargs.get("description"):  # module docstrings double as descriptions; a terminal shows no markup
            kwargs["description"] = kwargs["description"].replace("``", "")
        super().__init__(*args, **kwargs)
        self.key_help = dict(key_help or {})

    def error(self, message: str) -> NoReturn:
        """One line on stderr and exit 2 (argparse would print the whole usage first)."""
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (--help lists the options)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:  # noqa: ANN401
        # argparse's own message lists the choices but suggests nothing; this one does both.
        if action.choices is not None and value not in action.choices:
            valid = [str(c) for c in action.choices]
            raise argparse.ArgumentError(
                action, f"invalid choice {value!r}; valid: {', '.join(valid)}{did_you_mean(value, valid)}")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """Parse like argparse; unknown options are refused with the closest known one; ``--set help`` answers."""
        argv = list(sys.argv[1:] if args is None else args)
        for option, describe in self.key_help.items():
            if _asks_for_help(argv, option):
                print(describe(self._lenient(argv)))
                self.exit(0)
        ns, extras = self.parse_known_args(argv, namespace)
        if extras:
            options = sorted({s for a in self._actions for s in a.option_strings if s.startswith("--")})
            bad = extras[0]
            if bad.startswith("-"):
                self.error(f"unknown option {bad!r}; valid: {', '.join(options)}{did_you_mean(bad, options)}")
            self.error(f"unexpected argument {bad!r}")
        return ns

    def _lenient(self, argv: list[str]) -> argparse.Namespace:
        """What ``argv`` says when required options may be missing (for ``--set help``)."""
        saved = [(a, a.required) for a in self._actions] + [(g, g.required) for g in self._mutually_exclusive_groups]
        try:
            for item, _ in saved:
                item.required = False
            ns, _ = self.parse_known_args(argv)
        finally:
            for item, required in saved:
                item.required = required
        return ns


def _asks_for_help(argv: list[str], option: str) -> bool:
    """``--set help`` or ``--set=help`` in ``argv``."""
    pairs = zip(argv, [*argv[1:], ""], strict=True)
    return any((a == option and b == "help") or a == f"{option}=help" for a, b in pairs)


def cli_main(prog: str) -> Callable[[Callable[[list[str]], int]], Callable[..., int]]:
    """Decorate a subcommand's ``main(argv) -> int``: a :class:`UsageError` becomes one stderr line and exit 2.

    The wrapped function may also be called with ``argv=None`` (then ``sys.argv[1:]`` is used).
    """

    def wrap(fn: Callable[[list[str]], int]) -> Callable[..., int]:
        @functools.wraps(fn)
        def main(argv: Sequence[str] | None = None) -> int:
            try:
                return fn(list(sys.argv[1:] if argv is None else argv))
            except UsageError as exc:
                print(f"{prog}: error: {one_line(str(exc))}", file=sys.stderr)
                return EXIT_USAGE

        return main

    return wrap
