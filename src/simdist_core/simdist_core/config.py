"""Typed configuration helpers: ``--set a.b=value`` overrides on frozen dataclasses.

Every component owns one frozen, keyword-only dataclass next to its code and validates it in
``__post_init__``. This module only knows how to apply dotted string overrides to such a tree,
coercing strings to the field's declared type, and how to turn a config into plain JSON.
Unknown keys are errors that list the valid ones.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """Parse ``["a.b=1", "c=x"]`` into ``{"a.b": "1", "c": "x"}``.

    Raises:
        ValueError: a pair without ``=`` or with an empty key.
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"override {pair!r} is not of the form key=value (e.g. terrain.friction=0.07)")
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
            raise ValueError(f"{key}={value!r} is not one of {list(choices)}")
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


def apply_overrides(config: T, overrides: Mapping[str, str], *, _prefix: str = "") -> T:
    """Return a copy of the dataclass ``config`` with dotted string overrides applied.

    Validation runs again in each rebuilt dataclass's ``__post_init__``.

    Raises:
        ValueError: unknown key (the message lists valid keys) or a value of the wrong type.
    """
    nested: dict[str, dict[str, str]] = {}
    direct: dict[str, Any] = {}
    fields = {f.name: f for f in dataclasses.fields(config)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(type(config))
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        full_key = _prefix + key  # errors name the key as the user typed it
        if head not in fields:
            raise ValueError(
                f"unknown config key {full_key!r} for {type(config).__name__}; valid keys: {sorted(fields)}"
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
        direct[head] = apply_overrides(getattr(config, head), sub, _prefix=f"{_prefix}{head}.")
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
