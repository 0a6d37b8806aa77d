#!/usr/bin/env python3
r"""Do the UR5e value labels, and the value head distilled from them, tell an insertion from a stuck search?

The planner's terminal value should rank "peg over the hole and about to go in" above "peg pressed beside the hole,
stuck". ``simdist figure value`` showed that the deployed model's value head does not (failures end higher than
successes). This asks where that comes from, on a pretraining dataset of ``simdist generate --robot ur5e``:

* rows "at the hole" (not inserted yet; tip within ``--lateral-mm`` of the hole's axis and ``--height-mm`` of its
  top, from the row's privileged ``value_features``), each with its episode's outcome: inserted within the next K
  steps (``--within``), or the episode never inserts;
* scores: the dataset's value **label** (the expert value function of ``simdist_core.data.value_labels``, which
  the head is trained to match), the model's value **head** on the encoder's latent of the row (``--checkpoint``;
  on at most ``--head-rows`` rows drawn at random), and, as a reference that needs no learning, minus the
  **lateral error** (how far the tip is off the axis), and, with ``--value-fn DIR``, the labels another fitted
  expert value function would give (``DIR/value_fn.safetensors``, e.g. from ``simdist generate --set
  data.value.episodes=64``: does a fit on more expert episodes rank the rows differently?);
* for each, the AUC of the outcome (0.5 = no separation; below 0.5 = ranked the wrong way round), with a 95 %
  interval from resampling whole episodes.

    python scripts/diagnostics/value_outcomes.py --data <ur5e peg dataset> --checkpoint checkpoints/ur5e \
        --json bench_results/value_outcomes_ur5e_peg.json
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
from simdist_core.data.value_labels import ValueFunction

# Columns of the UR5e ``value_features`` (``Ur5eEnv.privileged_state``) and their scales.
REL_Z, LATERAL, SUCCESS = 2, 5, 8
REL_Z_SCALE_M, LATERAL_SCALE_M = 0.05, 0.01


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(score of a positive > score of a negative), ties counted half (Mann-Whitney U / (n_pos n_neg))."""
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    scores = np.concatenate([pos, neg])
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    # average ranks over ties
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2.0) / (len(pos) * len(neg)))


def auc_ci(score: np.ndarray, positive: np.ndarray, episode: np.ndarray, rounds: int,
           seed: int) -> tuple[float, list[float]]:  # fmt: skip
    """AUC of ``positive`` by ``score`` and its 95 % interval from resampling episodes with replacement."""
    point = auc(score[positive], score[~positive])
    ids, inverse = np.unique(episode, return_inverse=True)
    by_episode = np.split(np.argsort(inverse, kind="stable"), np.cumsum(np.bincount(inverse))[:-1])
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(rounds):
        rows = np.concatenate([by_episode[i] for i in rng.integers(0, len(ids), len(ids))])
        drawn, pos = score[rows], positive[rows]
        draws.append(auc(drawn[pos], drawn[~pos]))
    draws = np.asarray(draws)
    draws = draws[np.isfinite(draws)]
    return point, [float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))] if draws.size else []


@torch.inference_mode()
def value_head(model: torch.nn.Module, dataset: Dataset, rows: np.ndarray, batch: int = 256) -> np.ndarray:
    """(len(rows),) the model's value head on the encoder's latent of each row (task units)."""
    sampler = WindowSampler(dataset, model.spec, horizon=1, batch_size=1)
    out = []
    for i in range(0, len(rows), batch):
        window = sampler.sample(starts=rows[i : i + batch])
        latent = model.encode({key: value[:, 0] for key, value in window["obs"].items()})
        out.append(model.value(latent, latent.z[:, None])[:, 0].numpy())
    return np.concatenate(out)


def main(argv: list[str] | None = None) -> int:
    """Print the AUC table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a `simdist generate --robot ur5e` dataset")
    parser.add_argument("--checkpoint", type=Path, help="score its value head too (encodes --head-rows rows)")
    parser.add_argument("--lateral-mm", type=float, default=3.0, help="at the hole: tip this close to the axis")
    parser.add_argument("--height-mm", type=float, default=10.0, help="at the hole: tip at most this above its top")
    parser.add_argument("--within", default="25,40,100", help="steps (20 Hz) within which 'inserts soon' counts")
    parser.add_argument("--value-fn", type=Path, help="folder of another fitted value function to score the rows with")
    parser.add_argument("--head-rows", type=int, default=4000, help="rows the value head is scored on")
    parser.add_argument("--bootstrap", type=int, default=200, help="episode resamples for the intervals")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    data = Dataset(args.data, verify="lazy")
    features, label = data.array("priv/value_features"), data.array("value").astype(np.float64)
    if features.shape[1] <= SUCCESS:
        raise SystemExit(f"{args.data}: value_features have {features.shape[1]} columns; is this a UR5e dataset?")
    episode, row = data.row_episode, np.arange(data.n_steps)
    inserted = features[:, SUCCESS] > 0.5
    first_inserted = np.full(data.num_episodes, data.n_steps)  # per episode; n_steps: it never inserts
    np.minimum.at(first_inserted, episode[inserted], row[inserted])
    lateral = features[:, LATERAL] * LATERAL_SCALE_M
    at_hole = ((~inserted) & (lateral < args.lateral_mm / 1e3)
               & (features[:, REL_Z] * REL_Z_SCALE_M < args.height_mm / 1e3))  # fmt: skip
    at_hole &= row + 1 < data.episode_ends[episode]  # a window (and so the head's input) can start here
    rows = np.flatnonzero(at_hole)
    steps_to_insert = np.where(first_inserted[episode[rows]] < data.n_steps, first_inserted[episode[rows]] - rows,
                               np.inf)  # fmt: skip
    outcomes = {f"inserts_within_{k}_steps": steps_to_insert <= int(k) for k in args.within.split(",")}
    outcomes["episode_inserts"] = np.isfinite(steps_to_insert)

    rng = np.random.default_rng(args.seed)
    head_pick = np.sort(rng.choice(len(rows), min(args.head_rows, len(rows)), replace=False))
    scores = {"label": (label[rows], np.arange(len(rows))), "minus_lateral": (-lateral[rows], np.arange(len(rows)))}
    refit = ValueFunction.load(args.value_fn) if args.value_fn is not None else None
    if refit is not None:
        scores["refit_label"] = (refit(features[rows]).astype(np.float64), np.arange(len(rows)))
    if args.checkpoint is not None:
        model = load_checkpoint(args.checkpoint)[0].eval()
        scores["head"] = (value_head(model, data, rows[head_pick]), head_pick)
        scores["label_on_head_rows"] = (label[rows[head_pick]], head_pick)
        head, lab = scores["head"][0], scores["label_on_head_rows"][0]
        head_vs_label = {"r": float(np.corrcoef(head, lab)[0, 1]), "mae": float(np.abs(head - lab).mean())}
    else:
        head_vs_label = None

    table = {}
    for outcome, positive in outcomes.items():
        table[outcome] = {"positives": int(positive.sum()), "negatives": int((~positive).sum())}
        for name, (score, which) in scores.items():
            point, ci = auc_ci(score, positive[which], episode[rows[which]], args.bootstrap, args.seed)
            table[outcome][name] = {"auc": point, "auc_ci95": ci,
                                    "mean_positive": float(score[positive[which]].mean()),
                                    "mean_negative": float(score[~positive[which]].mean())}  # fmt: skip
    episodes_inserted = int((first_inserted < data.n_steps).sum())
    report = {"data": str(args.data), "checkpoint": str(args.checkpoint) if args.checkpoint else None,
              "value_fn": refit.meta if refit is not None else None,
              "rows": int(data.n_steps), "episodes": int(data.num_episodes), "episodes_inserted": episodes_inserted,
              "at_hole_rows": int(len(rows)), "at_hole_episodes": int(np.unique(episode[rows]).size),
              "head_rows": int(len(head_pick)) if args.checkpoint else 0, "head_vs_label": head_vs_label,
              "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
              "outcomes": table}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")

    print(f"{args.data}: {data.num_episodes} episodes ({episodes_inserted} insert), {len(rows)} rows at the hole "
          f"in {report['at_hole_episodes']} episodes")
    names = list(scores)
    print("| outcome | positives / negatives | " + " | ".join(f"AUC {n} [95 % CI]" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for outcome, cell in table.items():
        parts = [f"{cell[n]['auc']:.3f} [{cell[n]['auc_ci95'][0]:.3f}, {cell[n]['auc_ci95'][1]:.3f}]"
                 if cell[n]["auc_ci95"] else f"{cell[n]['auc']:.3f}" for n in names]  # fmt: skip
        print(f"| {outcome} | {cell['positives']} / {cell['negatives']} | " + " | ".join(parts) + " |")
    if head_vs_label:
        print(f"value head against its labels on the head rows: r {head_vs_label['r']:.3f}, "
              f"MAE {head_vs_label['mae']:.1f}")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
