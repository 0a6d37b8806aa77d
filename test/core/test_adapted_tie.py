"""The planner's looser tie for models finetuned on this robot: when it applies, and malformed counts."""

import pytest
from simdist_core.checkpoint import Manifest
from simdist_core.planning.adapted_tie import AdaptedTie, finetuned_data_steps


def test_tie_loosens_only_for_models_finetuned_on_enough_robot_data():
    tie = AdaptedTie(prior_weight=500.0, after_data_steps=13_600)
    assert tie.prior_weight_for(1000.0, None) == 1000.0  # the shipped model
    assert tie.prior_weight_for(1000.0, 13_599) == 1000.0  # finetuned on less than the measured models
    assert tie.prior_weight_for(1000.0, 13_600) == 500.0
    assert AdaptedTie().prior_weight_for(1000.0, 10**6) == 1000.0  # off by default
    assert AdaptedTie(0.0, 0).prior_weight_for(1000.0, 0) == 0.0  # zero is a tie like any other, not "off"


def test_tie_refuses_nonsense():
    with pytest.raises(ValueError, match="nan"):
        AdaptedTie(float("nan"))
    with pytest.raises(ValueError, match="after_data_steps"):
        AdaptedTie(500.0, -1)


@pytest.mark.parametrize("extra, steps", [({"data_steps": 15_200}, 15_200), ({}, None), ({"data_steps": -3}, None),
                                          ({"data_steps": "15200"}, None), ({"data_steps": 1.5e4}, None),
                                          ({"data_steps": True}, None)])
def test_finetuned_data_steps_reads_only_a_plain_count(extra, steps):
    manifest = Manifest(format_version=1, robot="ur5e", model_config={}, parts={}, weights_sha256="", version=2,
                        extra=extra)
    assert finetuned_data_steps(manifest) == steps
    assert finetuned_data_steps(object()) is None  # anything without extras: not finetuned here
