"""Offline-to-online RL baselines for the adaptation benchmark: RLPD and IQL.

Both agents act from a flat vector of the world model's encoder inputs (``common.flat_obs``; with a camera,
the frozen encoder's latent in place of the image: ``common.EncodedObservation``), are
trained first on the pretraining dataset (offline) and then on live experience in the shifted task
(online), and act through the same environment wrapper at the same control rate as the planner.
"""

from simdist_core.baselines.common import (
    AgentPlanner,
    EncodedObservation,
    FlatObservation,
    OfflineTransitions,
    ReplayBuffer,
    flat_obs,
)
from simdist_core.baselines.iql import IQLAgent, IQLConfig
from simdist_core.baselines.rlpd import RLPDAgent, RLPDConfig

__all__ = [
    "AgentPlanner",
    "EncodedObservation",
    "FlatObservation",
    "IQLAgent",
    "IQLConfig",
    "OfflineTransitions",
    "RLPDAgent",
    "RLPDConfig",
    "ReplayBuffer",
    "flat_obs",
]
