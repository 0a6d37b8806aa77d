#!/usr/bin/env python3
r"""How precisely does a UR5e model's latent know where the peg is relative to the hole?

The peg fits with 0.5 mm of clearance a side, and the failed nominal episodes land 2-5 mm beside the hole
and never centre. Everything the policy prior, dynamics and heads know of the task command (the registered
fixture pose) reaches them through the encoder's latent z (the context tokens carry proprio and actions, not
the command). This reads off z, with a small MLP fitted on some episodes and scored on others, what insertion
needs:

* ``tip_minus_command_mm``: tool tip minus the commanded hole position (x, y, base frame), which the encoder's
  inputs determine exactly (tcp_pos in proprio, the command);
* ``yaw_minus_command_rad``: tool yaw minus the commanded fixture yaw, modulo a quarter turn (square peg);
* ``tip_minus_hole_mm``: tip minus the true hole (fixture frame, privileged), knowable only up to the
  registration error (1.5 mm) plus what contact and the camera tell.

The same MLP fitted on the encoder's own inputs at the current step (normalised proprio and scaled command,
as the encoder sees them) shows what a network of that size gets from the raw numbers. Scores are held-out
root-mean-square errors, over all rows and over rows near the hole (tip within 10 mm of the hole laterally and
15 mm above it), beside the target's own spread (the error of always predicting the mean).

    python scripts/diagnostics/ur5e_latent_readout.py --checkpoint checkpoints/ur5e --data <ur5e dataset> \
        --json bench_results/ur5e_latent_readout.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.data.dataset import Dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.sim.ur5e import quarter_turn
from torch import nn

FEATURES = ("tip_minus_command_mm", "yaw_minus_command_rad", "tip_minus_hole_mm")


@torch.no_grad()
def encode_rows(model: torch.nn.Module, dataset: Dataset, rows: np.ndarray, batch: int) -> tuple[np.ndarray, ...]:
    """Latent z and the encoder's raw current-step inputs (normalised proprio, scaled command) of ``rows``."""
    sampler = WindowSampler(dataset, model.spec, horizon=1, batch_size=batch)
    enc = model.encoder
    zs, raws = [], []
    for i in range(0, len(rows), batch):
        obs = {k: v[:, 0] for k, v in sampler.sample(rows[i : i + batch])["obs"].items()}  # current step
        zs.append(model.encode(obs).z.numpy())
        proprio = (obs["proprio"][:, -1] - enc.proprio_mean) / enc.proprio_std
        command = (obs["command"] - enc.command_offset) / enc.command_scale
        raws.append(torch.cat([proprio, command], dim=-1).numpy())
    return np.concatenate(zs), np.concatenate(raws)


def targets(dataset: Dataset, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 5) targets [tip - command x, y (mm), yaw - command yaw (rad), tip - hole x, y (mm)] and a near mask."""
    proprio = dataset.gather("obs/proprio", rows)
    command = dataset.gather("obs/command", rows)
    features = dataset.gather("priv/value_features", rows)  # layout: UR5eInsertEnv.privileged_state
    tcp_xy, yaw = proprio[:, 12:14], np.arctan2(proprio[:, 16], proprio[:, 15])
    rel_hole = features[:, :3] * 50.0  # / 5 cm -> mm
    y = np.column_stack([(tcp_xy - command[:, :2]) * 1000.0, quarter_turn(yaw - command[:, 2]), rel_hole[:, :2]])
    near = (np.hypot(rel_hole[:, 0], rel_hole[:, 1]) < 10.0) & (rel_hole[:, 2] < 15.0)
    return y.astype(np.float32), near


def fit_mlp(x: np.ndarray, y: np.ndarray, steps: int, seed: int) -> nn.Module:
    """A 2 x 256 SiLU MLP fitted to standardised targets by Adam (the readout; its size is fixed, not tuned)."""
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(x.shape[1], 256), nn.SiLU(), nn.Linear(256, 256), nn.SiLU(),
                        nn.Linear(256, y.shape[1]))  # fmt: skip
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, len(xt), (512,), generator=gen)
        loss = (net(xt[idx]) - yt[idx]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return net.eval()


def rmse_table(pred: np.ndarray, y: np.ndarray, mask: np.ndarray) -> dict:
    """Per feature: held-out RMSE (a vector's RMSE is over its components' Euclidean error) on the masked rows."""
    err = pred[mask] - y[mask]
    return {"tip_minus_command_mm": float(np.sqrt((err[:, :2] ** 2).sum(1).mean())),
            "yaw_minus_command_rad": float(np.sqrt((err[:, 2] ** 2).mean())),
            "tip_minus_hole_mm": float(np.sqrt((err[:, 3:5] ** 2).sum(1).mean()))}  # fmt: skip


def main() -> None:
    """Encode, fit the readouts on 80 % of the episodes, score them on the rest, print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=Path("checkpoints/ur5e"))
    parser.add_argument("--data", type=Path, required=True, help="a UR5e dataset from `simdist generate`")
    parser.add_argument("--steps", type=int, default=3000, help="readout updates (batch 512)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, _ = load_checkpoint(args.checkpoint)
    dataset = Dataset(args.data)
    rows = np.arange(dataset.n_steps)
    z, raw = encode_rows(model, dataset, rows, batch=256)
    y, near = targets(dataset, rows)
    episodes = np.unique(dataset.row_episode)
    held = np.isin(dataset.row_episode, np.random.default_rng(args.seed).permutation(episodes)[: len(episodes) // 5])
    mean, std = y[~held].mean(0), y[~held].std(0) + 1e-6
    result = {"checkpoint": str(args.checkpoint), "data": str(args.data), "data_sha256": dataset.checksum(),
              "data_config": dataset.info.get("config"), "rows": int(len(rows)),
              "held_out_rows": int(held.sum()), "held_out_near_rows": int((held & near).sum()),
              "readout": "2 x 256 SiLU MLP, Adam 1e-3 cosine, batch 512", "steps": args.steps}  # fmt: skip
    result["spread"] = {"all": rmse_table(np.broadcast_to(mean, y.shape), y, held),
                        "near": rmse_table(np.broadcast_to(mean, y.shape), y, held & near)}  # fmt: skip
    for name, x in (("latent_z", z), ("encoder_inputs", raw)):
        net = fit_mlp(x[~held], (y[~held] - mean) / std, args.steps, args.seed)
        with torch.no_grad():
            pred = net(torch.from_numpy(x)).numpy() * std + mean
        result[name] = {"all": rmse_table(pred, y, held), "near": rmse_table(pred, y, held & near)}
    print(f"held-out RMSE ({result['held_out_rows']} rows, {result['held_out_near_rows']} near the hole)")
    print(f"{'read from':<22}{'rows':<6}" + "".join(f"{f:>24}" for f in FEATURES))
    for name in ("spread", "latent_z", "encoder_inputs"):
        for part in ("all", "near"):
            print(f"{name:<22}{part:<6}" + "".join(f"{result[name][part][f]:>24.3f}" for f in FEATURES))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print("wrote", args.json)


if __name__ == "__main__":
    main()
