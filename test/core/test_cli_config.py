"""The command line explains its own keys: ``simdist config show`` and ``--set help``."""

from dataclasses import dataclass, field

import pytest
from simdist_core.cliargs import UsageError, check_list, did_you_mean
from simdist_core.config import apply_overrides, config_keys, field_docs, format_keys

from simdist_core import cli, config_show


@dataclass(frozen=True, kw_only=True)
class _Inner:
    mu: float = 0.8
    """Friction."""


@dataclass(frozen=True, kw_only=True)
class _Outer:
    inner: _Inner = field(default_factory=_Inner)
    """A section."""
    kind: str = "flat"
    """Which floor.

    Second paragraph, not shown."""
    span: tuple[float, float] = (0.1, 0.2)
    maybe: int | None = None
    """Optional."""


@dataclass(frozen=True, kw_only=True)
class _Derived(_Outer):
    extra: bool = False
    """Added by the subclass."""


def test_keys_have_type_default_and_docstring():
    keys = {k.key: k for k in config_keys(_Derived(span=(1.0, 2.0)))}
    assert list(keys) == ["inner.mu", "kind", "span", "maybe", "extra"]
    assert (keys["inner.mu"].type, keys["inner.mu"].default, keys["inner.mu"].doc) == ("float", "0.8", "Friction.")
    assert keys["kind"].doc == "Which floor."
    assert keys["span"].type == "tuple[float, float]" and keys["span"].default == "1.0,2.0" and keys["span"].doc == ""
    assert keys["maybe"].type == "int | None" and keys["extra"].doc == "Added by the subclass."
    assert field_docs(_Derived)["inner"] == "A section."
    table = format_keys(keys.values(), "title")
    assert table.splitlines()[0] == "title" and "inner.mu" in table and "      Friction." in table


def test_unknown_key_suggests_the_closest_full_key():
    with pytest.raises(ValueError, match=r"valid keys under inner: \['mu'\]; did you mean 'inner.mu'\?"):
        apply_overrides(_Outer(), {"inner.muu": "1"})
    with pytest.raises(ValueError, match="unknown config key 'data.kinds'.*did you mean 'data.kind'"):
        apply_overrides(_Outer(), {"kinds": "x"}, key_prefix="data.")


def test_choice_helpers():
    assert did_you_mean("foam", ["flat", "fom"]) == "; did you mean 'fom'?" and did_you_mean("zzz", ["flat"]) == ""
    assert check_list("--methods", "a, b", ["a", "b", "c"]) == ["a", "b"]
    with pytest.raises(UsageError, match="--methods item 'd' is not valid; valid: a, b"):
        check_list("--methods", "a,d", ["a", "b"])
    with pytest.raises(UsageError, match="is empty"):
        check_list("--methods", ",", ["a"])


def test_every_overridable_key_is_documented():
    """`simdist config show NAME` for every name: each key has a type and a docstring."""
    for name in config_show.names():
        heading, rows = config_show.keys(name)
        assert rows and heading, name
        assert not [k.key for k in rows if not k.doc or not k.type], f"{name}: keys without a docstring"


def test_config_show_command(capsys):
    assert cli.main(["config", "show"]) == 0
    assert "go2/foam" in capsys.readouterr().out
    assert cli.main(["config", "show", "go2/foam"]) == 0
    out = capsys.readouterr().out
    assert "terrain.friction" in out and "float" in out and "Sliding friction" in out
    assert cli.main(["config", "show", "planner/reference"]) == 0
    assert "num_samples" in capsys.readouterr().out


def test_set_help_answers_without_the_required_options(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["eval", "--task", "ur5e/peg", "--set", "help"])
    assert exc.value.code == 0
    assert "fixture.grid" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["finetune", "--set=help"])
    assert exc.value.code == 0 and "optim.lr" in capsys.readouterr().out
