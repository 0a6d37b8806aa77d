"""Typed configuration helpers: ``--set a.b=value`` overrides on frozen dataclasses.

Every component owns one frozen, keyword-only dataclass next to its code and validates it in
``__post_init__``. This module only knows how to apply dotted string overrides to such a tree,
coercing strings to the field's declared type, how to turn a config into plain JSON, and how to
list every overridable key with its type, default and docstring (``simdist config show``, ``--set help``).
Unknown keys are errors that list the valid ones and suggest the closest.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import json
import textwrap
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from simdist_core.cliargs import UsageError, did_you_mean

T = TypeVar("T")


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """Parse ``["a.b=1", "c=x"]`` into ``{"a.b": "1", "c": "x"}``.

    Raises:
        UsageError: (a ValueError) a pair without ``=`` or with an empty key.
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"override {pair!r} is not of the form key=value (e.g. terrain.friction=0.07)")
        out[key.strip()] = value.strip()
    return out


def _coerce(value: str, annotation: Any, key: str) -> Any:
    """Convert a command-line string to ``annotation`` (bool, int, float, str, tuple, Optional)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value.lower() in ("none", "null"):
            return None
        return _coerce(value, args[0], key)
    if origin is typing.Literal:
        choices = typing.get_args(annotation)
        if value not in choices:
            raise ValueError(f"{key}={value!r} is not one of {list(choices)}{did_you_mean(value, choices)}")
        return value
    if origin is tuple:
        item_types = typing.get_args(annotation)
        parts = [p for p in value.strip("()[] ").split(",") if p.strip()]
        item = item_types[0] if item_types else str
        return tuple(_coerce(p.strip(), item, key) for p in parts)
    try:
        if annotation is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if annotation in (int, float, str):
            return annotation(value)
    except ValueError:
        raise ValueError(f"{key}={value!r} is not a valid {annotation.__name__}") from None
    raise ValueError(f"{key}: cannot set a field of type {annotation!r} from the command line")


def apply_overrides(config: T, overrides: Mapping[str, str], *, key_prefix: str = "") -> T:
    """Return a copy of the dataclass ``config`` with dotted string overrides applied.

    Validation runs again in each rebuilt dataclass's ``__post_init__``. ``key_prefix`` is how the
    command line spells the keys of this config (``data.`` for ``simdist generate``): errors use it.

    Raises:
        ValueError: unknown key (the message lists the valid keys at that level and suggests the closest
            full key) or a value of the wrong type.
    """
    return _apply(config, overrides, key_prefix, (config, key_prefix))


def apply_cli_overrides(config: T, pairs: Iterable[str] | Mapping[str, str], *, key_prefix: str = "") -> T:
    """:func:`apply_overrides` for a command line: any bad key or value is a :class:`UsageError` (exit 2).

    ``pairs`` are ``KEY=VALUE`` strings or an already parsed mapping.
    """
    overrides = dict(pairs) if isinstance(pairs, Mapping) else parse_overrides(pairs)
    try:
        return apply_overrides(config, overrides, key_prefix=key_prefix)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _apply(config: T, overrides: Mapping[str, str], prefix: str, root: tuple[Any, str]) -> T:
    """``apply_overrides`` one level down; ``root`` is (the whole tree, its key prefix): errors suggest from it."""
    nested: dict[str, dict[str, str]] = {}
    direct: dict[str, Any] = {}
    fields = {f.name: f for f in dataclasses.fields(config)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(type(config))
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        full_key = prefix + key  # errors name the key as the user typed it
        if head not in fields:
            raise ValueError(
                f"unknown config key {full_key!r} for {type(config).__name__}; valid keys"
                f"{' under ' + prefix.rstrip('.') if prefix else ''}: {sorted(fields)}"
                f"{did_you_mean(full_key, [k.key for k in config_keys(*root)])}"
            )
        if rest:
            if not dataclasses.is_dataclass(getattr(config, head)):
                raise ValueError(f"{full_key!r}: {head!r} is a value, not a section")
            nested.setdefault(head, {})[rest] = value
        elif dataclasses.is_dataclass(getattr(config, head)):
            raise ValueError(f"{full_key!r} is a section; set one of its fields, e.g. {head}.<field>=...")
        else:
            direct[head] = _coerce(value, hints[head], full_key)
    for head, sub in nested.items():
        direct[head] = _apply(getattr(config, head), sub, f"{prefix}{head}.", root)
    return dataclasses.replace(config, **direct)  # type: ignore[type-var]


def to_dict(config: Any) -> dict[str, Any]:
    """A JSON-ready dict of a (nested) dataclass config."""
    return json.loads(json.dumps(dataclasses.asdict(config), default=list))


def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """Rebuild a (nested) dataclass from ``to_dict`` output; unknown keys are errors."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)} for {cls.__name__}; valid: {sorted(names)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
            kwargs[name] = from_dict(hint, value)  # type: ignore[arg-type]
        elif typing.get_origin(hint) is tuple and isinstance(value, list):
            kwargs[name] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        else:
            kwargs[name] = value
    return cls(**kwargs)


@dataclasses.dataclass(frozen=True, kw_only=True)
class KeyInfo:
    """One overridable key of a config tree (a row of ``simdist config show``)."""

    key: str
    """Dotted key as ``--set`` takes it (``terrain.friction``)."""
    type: str
    """The field's type as written for a user (``float``, ``flat | slope``, ``tuple[float, ...]``)."""
    default: str
    """The value in this config (the task's or preset's default, not the class default)."""
    doc: str
    """The field's attribute docstring (first paragraph, one line)."""


def type_name(annotation: Any) -> str:  # noqa: ANN401  (any typing annotation)
    """A field type as a user reads it: ``float``, ``int | None``, ``flat | slope`` (Literal), ``tuple[float, ...]``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " | ".join(str(c) for c in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in typing.get_args(annotation))
    if origin is tuple:
        args = typing.get_args(annotation)
        inner = ", ".join("..." if a is Ellipsis else type_name(a) for a in args)
        return f"tuple[{inner}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings of a dataclass (the string literal under each field), base classes included.

    Read from the class source with ``ast``: Python keeps no attribute docstrings at run time. A class
    whose source is unavailable (built at run time) has none.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, after in zip(body, [*body[1:], None], strict=True):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[stmt.target.id] = " ".join(inspect.cleandoc(after.value.value).split("\n\n")[0].split())
    return docs


def config_keys(config: Any, prefix: str = "") -> list[KeyInfo]:  # noqa: ANN401  (any dataclass instance)
    """Every key ``--set`` can override in ``config``, depth first, with type, current value and docstring."""
    hints = typing.get_type_hints(type(config))
    docs = field_docs(type(config))
    out: list[KeyInfo] = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if dataclasses.is_dataclass(value):
            out += config_keys(value, f"{prefix}{f.name}.")
            continue
        shown = ",".join(str(v) for v in value) if isinstance(value, tuple) else str(value)
        out.append(KeyInfo(key=prefix + f.name, type=type_name(hints[f.name]), default=shown,
                           doc=docs.get(f.name, "")))
    return out


def format_keys(keys: Iterable[KeyInfo], title: str) -> str:
    """A table of keys for a terminal: ``key  type  default`` then the docstring, indented."""
    rows = list(keys)
    width_key = max([len(k.key) for k in rows] + [3])
    width_type = max([len(k.type) for k in rows] + [4])
    lines = [title, f"  {'key':<{width_key}}  {'type':<{width_type}}  default"]
    for k in rows:
        lines.append(f"  {k.key:<{width_key}}  {k.type:<{width_type}}  {k.default}")
        if k.doc:
            lines += textwrap.wrap(k.doc, width=110, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(lines)
