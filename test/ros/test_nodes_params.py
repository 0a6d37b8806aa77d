"""Declarative parameter tables on a real rclpy node (private Context): ranges, read-only, live-tunable checks."""

from dataclasses import dataclass

import pytest
import rclpy
from rclpy.context import Context
from rclpy.parameter import Parameter
from simdist_ros.params import P, TunableParams, declare_table

from simdist_ros import encoder_node, planner_node, sim_robot_node


@dataclass(frozen=True, kw_only=True)
class _Params:
    rate_hz: float
    depth: int
    name: str
    overrides: tuple[str, ...]
    gain: tuple[float, ...]
    temperature: float

    def __post_init__(self):
        if self.temperature > self.rate_hz:
            raise ValueError(f"temperature must be <= rate_hz, got {self.temperature=}")


ROWS = (
    P("rate_hz", 50.0, "rate", lo=1.0, hi=200.0, read_only=True),
    P("depth", 3, "depth", lo=1, hi=10),
    P("name", "go2", "robot"),
    P("overrides", (), "overrides"),
    P("gain", (1.0, 2.0), "gains"),
    P("temperature", 0.25, "temperature", lo=0.0, hi=100.0),
)


@pytest.fixture
def make_node():
    made = []

    def _make(*cli):
        ctx = Context()
        rclpy.init(context=ctx, args=["--ros-args", *cli])
        node = rclpy.create_node("param_test", context=ctx)
        made.append((ctx, node))
        return node

    yield _make
    for ctx, node in made:
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_declare_reads_defaults_and_overrides(make_node):
    node = make_node("-p", "depth:=5", "-p", "overrides:=['terrain.friction=0.2', 'a=1']")
    params = declare_table(node, ROWS, _Params)
    assert params == _Params(rate_hz=50.0, depth=5, name="go2", overrides=("terrain.friction=0.2", "a=1"),
                             gain=(1.0, 2.0), temperature=0.25)  # fmt: skip
    desc = node.describe_parameter("rate_hz")
    assert desc.read_only and desc.floating_point_range[0].to_value == 200.0


def test_out_of_range_override_fails_at_start(make_node):
    node = make_node("-p", "depth:=50")
    with pytest.raises(Exception, match="depth"):
        declare_table(node, ROWS, _Params)


def test_wrong_type_override_names_the_parameter(make_node):
    node = make_node("-p", "rate_hz:=50")  # an int for a float row
    with pytest.raises(ValueError, match="rate_hz.*decimal point"):
        declare_table(node, ROWS, _Params)


def test_live_tuning_checks_ranges_read_only_and_cross_field_rules(make_node):
    node = make_node()
    changes = []
    tunable = TunableParams(node, ROWS, declare_table(node, ROWS, _Params), on_change=changes.append)
    ok = node.set_parameters([Parameter("temperature", value=2.0)])[0]
    assert ok.successful and tunable.current.temperature == 2.0 and changes[-1].temperature == 2.0
    refused = node.set_parameters([Parameter("temperature", value=80.0)])[0]  # > rate_hz: __post_init__ says no
    assert not refused.successful and "temperature must be <= rate_hz" in refused.reason
    assert tunable.current.temperature == 2.0
    assert not node.set_parameters([Parameter("rate_hz", value=60.0)])[0].successful  # read-only
    assert not node.set_parameters([Parameter("depth", value=11)])[0].successful  # range
    assert tunable.current.depth == 3 and len(changes) == 1


def test_table_and_dataclass_must_agree(make_node):
    node = make_node()
    with pytest.raises(ValueError, match="does not match"):
        declare_table(node, ROWS[:-1], _Params)
    with pytest.raises(ValueError, match="default 500"):
        P("x", 500, "bad default", lo=0, hi=10)


@pytest.mark.parametrize("module", [sim_robot_node, encoder_node, planner_node])
def test_node_tables_declare_cleanly(make_node, module):
    """Every node's table declares on a real node with its defaults (names, types, ranges are consistent)."""
    cls = {sim_robot_node: sim_robot_node.SimRobotParams, encoder_node: encoder_node.EncoderParams,
           planner_node: planner_node.PlannerParams}[module]  # fmt: skip
    params = declare_table(make_node(), module.ROWS, cls)
    assert {row.name for row in module.ROWS} == set(vars(params))
