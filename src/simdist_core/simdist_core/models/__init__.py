"""simdist_core.models: the latent world model (encoder, dynamics, heads) and its config."""

from simdist_core.models.encoders import ENCODERS
from simdist_core.models.world_model import (
    PART_NAMES,
    Latent,
    LossWeights,
    WorldModel,
    WorldModelConfig,
    freeze_except,
)

__all__ = ["ENCODERS", "PART_NAMES", "Latent", "LossWeights", "WorldModel", "WorldModelConfig", "freeze_except"]
