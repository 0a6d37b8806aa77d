"""Builders shared by the TRAIN tests (test_pretrain/finetune/eval/adaptation/ddp): tiny real models, real data.

Data is collected in real MuJoCo tasks by a real MPPI planner over a tiny world model, recorded with
the same ``make_record`` path the robot's replay buffer uses; nothing is faked.
"""

from pathlib import Path

import numpy as np
import torch
from simdist_core.data.dataset import Dataset
from simdist_core.eval.experience import collect_experience
from simdist_core.models.world_model import WorldModel, WorldModelConfig
from simdist_core.planning.mppi import MPPIPlanner, planner_preset
from simdist_core.robots import get_robot
from simdist_core.sim.base import make_env

TINY = WorldModelConfig(latent_dim=16, width=16, heads=2, layers=1, ffn=32, head_layers=1, policy_layers=1,
                        encoder_hidden=32)
TINY_OVERRIDES = ["model.latent_dim=16", "model.width=16", "model.heads=2", "model.layers=1", "model.ffn=32",
                  "model.head_layers=1", "model.policy_layers=1", "model.encoder_hidden=32"]
# A small planner: 12 candidates x 1 iteration over an 8-step horizon keeps data collection fast.
TINY_PLANNER = planner_preset("cpu", horizon=8, num_samples=8, num_pi_samples=4, iterations=1, num_elites=4)


def tiny_model(robot="go2", seed=0):
    torch.manual_seed(seed)
    return WorldModel(get_robot(robot), TINY).eval()


def collect(out: Path, task="go2/flat", overrides=None, *, model=None, episodes=6, max_steps=40, seed=0,
            exploration_std=0.3, record_reward=False) -> Dataset:
    """Roll a tiny planner out in a real task and return the recorded step store (with the reward if asked)."""
    env = make_env(task, overrides or {})
    model = model if model is not None else tiny_model(env.spec.name)
    planner = MPPIPlanner(model, TINY_PLANNER, seed=seed)
    collect_experience(env, planner, out / "shard-0", episodes=episodes, max_steps=max_steps, seed=seed,
                       exploration_std=exploration_std, chunk_steps=64, record_reward=record_reward)
    return Dataset(out)


def fit_normalizers(model, dataset: Dataset) -> None:
    rows = np.arange(dataset.n_steps)
    model.fit_normalizer(proprio=dataset.gather("obs/proprio", rows))
