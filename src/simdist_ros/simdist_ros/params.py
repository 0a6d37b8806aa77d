"""Declarative ROS parameter tables.

A node lists its parameters as rows ``P(name, default, description, lo=, hi=, read_only=)``, declares
them all with one call, and reads them once into a frozen dataclass whose field names are the
parameter names. rclpy enforces ranges and read-only flags at declaration and on every set
(``ParameterDescriptor``); live-tunable values are additionally checked by rebuilding the frozen
dataclass in an on-set callback, so the dataclass ``__post_init__`` is the one place a cross-field
rule lives. A successful set replaces the node's dataclass between two callbacks (a reference swap).

Example::

    ROWS = (
        P("control_hz", 0.0, "Tick rate; 0 = the robot spec's rate", lo=0.0, hi=500.0, read_only=True),
        P("temperature", 0.25, "MPPI temperature", lo=1e-4, hi=10.0),
    )
    params = declare_table(node, ROWS, PlannerParams)
    tunable = TunableParams(node, ROWS, params, on_change=lambda p: ...)

Parameter overrides must match the row's type: a float row needs ``50.0``, not ``50``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterTypeException
from rclpy.node import Node
from rclpy.parameter import Parameter

T = TypeVar("T")

ParamValue = bool | int | float | str | tuple[str, ...] | tuple[float, ...] | tuple[int, ...]


@dataclass(frozen=True)
class P:
    """One parameter row: name, default, description, optional numeric range, read-only flag."""

    name: str
    """Parameter name (snake_case, no dots): also the field name in the node's params dataclass."""
    default: ParamValue
    """Default value; its Python type fixes the parameter type (``()`` = empty string array)."""
    description: str
    """One line shown by ``ros2 param describe``; say the unit."""
    lo: float | None = None
    """Inclusive lower bound (numeric rows only)."""
    hi: float | None = None
    """Inclusive upper bound (numeric rows only)."""
    read_only: bool = False
    """Refuse changes after declaration (model path, robot, rates)."""

    def __post_init__(self) -> None:
        if not self.name or "." in self.name or not self.name.replace("_", "a").isalnum():
            raise ValueError(f"parameter name must be snake_case without dots, got {self.name=!r}")
        numeric = isinstance(self.default, int | float) and not isinstance(self.default, bool)
        if (self.lo is not None or self.hi is not None) and not numeric:
            raise ValueError(f"{self.name}: a range needs a numeric default, got {self.default=!r}")
        if numeric and (self.lo is None) != (self.hi is None):
            raise ValueError(f"{self.name}: give both lo and hi or neither, got {self.lo=}, {self.hi=}")
        if numeric and self.lo is not None and not self.lo <= self.default <= self.hi:
            raise ValueError(f"{self.name}: default {self.default} outside [{self.lo}, {self.hi}]")

    def descriptor(self) -> ParameterDescriptor:
        """The rclpy descriptor: description, read-only flag and (for numbers) the range."""
        desc = ParameterDescriptor(name=self.name, description=self.description, read_only=self.read_only)
        if self.lo is not None and self.hi is not None:
            if isinstance(self.default, int) and not isinstance(self.default, bool):
                desc.integer_range = [IntegerRange(from_value=int(self.lo), to_value=int(self.hi), step=1)]
            else:
                desc.floating_point_range = [FloatingPointRange(from_value=float(self.lo), to_value=float(self.hi))]
        return desc


def _to_ros(value: ParamValue) -> Any:  # noqa: ANN401  (rclpy's AllowableParameterValue)
    return list(value) if isinstance(value, tuple) else value


def _from_ros(row: P, value: Any) -> ParamValue:  # noqa: ANN401
    if value is None:  # a statically typed empty array that nobody overrode
        return row.default
    if isinstance(row.default, tuple):
        return tuple(value)
    return value


def declare_table(node: Node, rows: Sequence[P], cls: type[T]) -> T:
    """Declare every row on ``node`` and read the values once into ``cls(**values)``.

    Args:
        node: the node that owns the parameters.
        rows: the parameter table; names must match ``cls``'s fields exactly.
        cls: a frozen dataclass whose ``__post_init__`` validates cross-field rules.

    Returns:
        The validated parameter values.

    Raises:
        ValueError: table and dataclass disagree, or an override has the wrong type (the message names
            the parameter and the expected type), or ``cls`` rejects the values.
    """
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    names = [row.name for row in rows]
    if set(names) != fields or len(names) != len(set(names)):
        raise ValueError(f"parameter table {sorted(names)} does not match {cls.__name__} fields {sorted(fields)}")
    values: dict[str, ParamValue] = {}
    for row in rows:
        default: Any = _to_ros(row.default)
        if isinstance(row.default, tuple) and not row.default:
            default = Parameter.Type.STRING_ARRAY  # an empty list cannot say its element type
        try:
            param = node.declare_parameter(row.name, default, row.descriptor())
        except InvalidParameterTypeException as exc:
            raise ValueError(
                f"parameter {row.name!r} must be a {type(row.default).__name__} (default {row.default!r}): {exc}; "
                "write floats with a decimal point, e.g. 50.0"
            ) from None
        values[row.name] = _from_ros(row, param.value)
    return cls(**values)


class TunableParams(Generic[T]):
    """Keeps a node's frozen params current under ``ros2 param set`` (live-tunable rows only).

    The on-set callback rebuilds the dataclass with the requested values; if ``__post_init__`` raises,
    the set is refused with that message. After a successful set, ``current`` is replaced (one
    reference assignment, so a control tick sees either the old or the new values, never a mix)
    and ``on_change`` is called.
    """

    def __init__(
        self,
        node: Node,
        rows: Sequence[P],
        initial: T,
        on_change: Callable[[T], None] | None = None,
    ) -> None:
        self._rows = {row.name: row for row in rows}
        self.current: T = initial
        """The latest accepted values (read it once per tick)."""
        self._on_change = on_change
        node.add_on_set_parameters_callback(self._check)
        node.add_post_set_parameters_callback(self._apply)

    def _candidate(self, params: Sequence[Parameter]) -> T:
        changes = {p.name: _from_ros(self._rows[p.name], p.value) for p in params if p.name in self._rows}
        return dataclasses.replace(self.current, **changes)  # type: ignore[type-var]

    def _check(self, params: list[Parameter]) -> SetParametersResult:
        try:
            self._candidate(params)
        except (ValueError, TypeError) as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _apply(self, params: list[Parameter]) -> None:
        self.current = self._candidate(params)
        if self._on_change is not None:
            self._on_change(self.current)
