from dataclasses import dataclass, field

import pytest
from simdist_core.config import apply_overrides, from_dict, parse_overrides, to_dict


@dataclass(frozen=True, kw_only=True)
class _Terrain:
    friction: float = 0.8
    slope_deg: float = 0.0

    def __post_init__(self):
        if self.friction <= 0:
            raise ValueError(f"friction must be > 0, got {self.friction=}")


@dataclass(frozen=True, kw_only=True)
class _Task:
    terrain: _Terrain = field(default_factory=_Terrain)
    episode_s: float = 20.0
    randomise: bool = True
    name: str = "flat"


def test_overrides_coerce_types_and_nest():
    cfg = apply_overrides(_Task(), parse_overrides(["terrain.friction=0.07", "randomise=false", "episode_s=5"]))
    assert cfg.terrain.friction == pytest.approx(0.07)
    assert cfg.randomise is False
    assert cfg.episode_s == 5.0
    assert _Task().terrain.friction == 0.8  # defaults untouched


def test_unknown_key_lists_valid_keys():
    with pytest.raises(ValueError, match="valid keys"):
        apply_overrides(_Task(), {"terrain.mu": "0.1"})


def test_bad_value_is_a_clear_error():
    with pytest.raises(ValueError, match="not a valid float"):
        apply_overrides(_Task(), {"terrain.friction": "slippery"})
    with pytest.raises(ValueError, match="friction must be > 0"):
        apply_overrides(_Task(), {"terrain.friction": "-1"})
    with pytest.raises(ValueError, match="key=value"):
        parse_overrides(["terrain.friction"])


def test_dict_round_trip():
    cfg = apply_overrides(_Task(), {"terrain.slope_deg": "12"})
    assert from_dict(_Task, to_dict(cfg)) == cfg


def test_nested_errors_name_the_dotted_key():
    """Regression: errors in a nested section named only the inner key ('friction'), not 'terrain.friction'."""
    with pytest.raises(ValueError, match="'terrain.mu'"):
        apply_overrides(_Task(), {"terrain.mu": "0.1"})
    with pytest.raises(ValueError, match="terrain.friction='slippery'"):
        apply_overrides(_Task(), {"terrain.friction": "slippery"})
