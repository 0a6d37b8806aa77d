"""``simdist finetune``: adapt named parts of a checkpoint (default: dynamics only) to new data or a rosbag.

Supervised latent consistency on the new transitions; every other part is frozen and stays
bit-identical. A validation gate scores old and new on held-out *recent* data (the newest
``holdout_fraction`` of the steps). Gate policy: a model that is not better is **never written**:
the command prints the gate verdict and exits with code 3 (``EXIT_GATE_FAILED``) without creating
``--out``; a written checkpoint therefore always passed the gate, and its manifest says by how much.

Library use (the ROS finetuner node, the adaptation benchmark): ``finetune_dynamics`` and
``validation_gate`` (re-exported here from ``simdist_core.training.adapt``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

import torch

from simdist_core.cliargs import (
    ArgumentParser,
    UsageError,
    check_existing_path,
    check_list,
    check_new_path,
    check_positive,
    checkpoint_dir,
    cli_main,
)
from simdist_core.config import apply_cli_overrides, parse_overrides, to_dict
from simdist_core.data.dataset import check_dataset
from simdist_core.training.adapt import (
    FinetuneConfig,
    FinetuneReport,
    GateResult,
    finetune_dynamics,
    recent_split,
    validation_gate,
)
from simdist_core.training.common import git_describe

__all__ = ["EXIT_GATE_FAILED", "FinetuneConfig", "FinetuneReport", "GateResult", "finetune_dynamics", "main",
           "recent_split", "validation_gate"]  # fmt: skip

log = logging.getLogger(__name__)

EXIT_GATE_FAILED = 3
"""Exit code when the finetuned model did not beat the old one on held-out recent data (nothing written)."""


def _parse(argv: list[str]) -> argparse.Namespace:
    from simdist_core.config_show import describe

    parser = ArgumentParser(prog="simdist finetune", description=__doc__.splitlines()[0],
                            key_help={"--set": lambda _ns: describe("finetune")})
    parser.add_argument("--checkpoint", type=Path, required=True, help="checkpoint to adapt")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", type=Path, help="dataset folder (step store)")
    source.add_argument("--bag", type=Path, help="rosbag2 folder recorded by the recorder node")
    parser.add_argument("--out", type=Path, required=True, help="new checkpoint directory (must not exist)")
    parser.add_argument("--replay", type=Path, help="simulation dataset that --set replay_fraction=F of every "
                        "training batch is drawn from (the pretraining data)")
    parser.add_argument("--parts", default="dynamics", help="'dynamics' (SimDist), 'all', or a comma list of parts")
    parser.add_argument("--steps", type=int, help="optimizer updates (same as --set steps=N)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="FinetuneConfig override, e.g. batch_size=32, optim.lr=1e-4 "
                             "(`--set help` lists the keys)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--json", type=Path, help="write the finetune report (gate verdict included) here")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return parser.parse_args(argv)


def validate(args: argparse.Namespace) -> FinetuneConfig:
    """The finetune config, with every flag checked before any data is read or anything written.

    Raises:
        UsageError: a bad part, ``--set`` key or value, a missing checkpoint, data or bag, an existing ``--out``.
    """
    from simdist_core.models.world_model import PART_NAMES

    check_positive("--threads", args.threads)
    parts = ["all"] if args.parts == "all" else check_list("--parts", args.parts, ["all", *PART_NAMES])
    overrides = parse_overrides(args.overrides)
    if args.steps is not None:
        overrides["steps"] = str(args.steps)
    overrides["parts"] = ",".join(parts)
    cfg = apply_cli_overrides(FinetuneConfig(), overrides)
    checkpoint_dir("--checkpoint", args.checkpoint)
    check_new_path("--out", args.out)
    if cfg.replay_fraction and args.replay is None:
        raise UsageError(f"--set replay_fraction={cfg.replay_fraction} needs --replay (the pretraining dataset)")
    if args.replay is not None:
        check_dataset("--replay", args.replay)
    if args.data is not None:
        check_dataset("--data", args.data)
    else:
        check_existing_path("--bag", args.bag, marker="metadata.yaml", kind="rosbag2 recording")
    return cfg


def _dataset_from_bag(bag: Path, spec_name: str, workdir: Path) -> Path:
    """Convert a rosbag2 recording to a step store with the ROSGRAPH helper."""
    from simdist_core.data.bag import bag_to_dataset
    from simdist_core.robots import get_robot

    return Path(bag_to_dataset(bag, workdir / "bag_dataset", get_robot(spec_name)))


@cli_main("simdist finetune")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist finetune``; returns 0 (written), 2 (bad input) or 3 (gate failed, nothing written)."""
    args = _parse(argv)
    cfg = validate(args)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    from simdist_core.checkpoint import load_for_cli
    from simdist_core.data.dataset import Dataset
    from simdist_core.training.export import write_finetuned

    model, parent = load_for_cli("--checkpoint", args.checkpoint)
    with tempfile.TemporaryDirectory(prefix="simdist-finetune-") as tmp:
        try:
            data_dir = args.data if args.data is not None else _dataset_from_bag(args.bag, model.spec.name, Path(tmp))
            dataset = Dataset(data_dir)
            log.info("finetuning %s of %s on %r", cfg.parts, args.checkpoint, dataset)
            replay = Dataset(args.replay) if args.replay is not None else None
            new, report = finetune_dynamics(model, dataset, cfg, progress=not args.no_progress, replay=replay)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:  # bad/too little data, unreadable bag
            print(f"simdist finetune: cannot finetune on {args.data or args.bag}: {exc}", file=sys.stderr)
            return 2
        result = {"checkpoint": str(args.checkpoint), "out": str(args.out), "data": str(data_dir),
                  "bag": str(args.bag) if args.bag else None, "dataset_sha256": dataset.checksum(),
                  "replay": str(args.replay) if args.replay else None,
                  "config": to_dict(cfg), **report.to_json()}  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**result, "written": report.gate.passed}, indent=1))
    if not report.gate.passed:
        print(f"GATE FAILED: {report.gate.reason}. Nothing written to {args.out}; collect more/fresher data "
              "or lower the learning rate.", file=sys.stderr)  # fmt: skip
        return EXIT_GATE_FAILED
    extra = {"gate": report.gate.__dict__, "finetune": result, "code_version": git_describe()}
    if args.bag is not None:  # the robot's own transitions, as the finetuner node counts them (planning.adapted_tie)
        extra["data_steps"] = int(dataset.n_steps)
    manifest = write_finetuned(new, args.out, parent, cfg.trainable_parts, extra)
    print(f"wrote {args.out} (version {manifest.version}, parts {list(manifest.parts_changed)}): {report.gate.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
