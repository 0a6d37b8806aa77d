r"""How far finetuned dynamics moved their *action effect* from a reference model's, on held-out windows.

For each checkpoint: its held-out latent error (latent consistency, what the validation gate scores) and its
action-effect drift from ``--reference`` (the unweighted term of ``simdist_core.training.anchor``: the change in
``f(z, a') - f(z, a)`` for the recorded actions ``a`` and perturbed ones ``a'`` drawn like the planner's Gaussian
candidates, with one fixed draw of perturbations for every checkpoint). The reference itself reads 0 drift.

    python scripts/diagnostics/action_effect.py --reference bench_results/go2_csr_dagger2_pretrained \
        --heldout <benchmark workdir>/heldout --model plain=<ckpt> --model anchored=<ckpt> --json out.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.eval.adaptation import heldout_batches
from simdist_core.training.anchor import action_effect_drift
from simdist_core.training.trainer import evaluate_loss, finetune_loss_weights


def main(argv: list[str] | None = None) -> int:
    """Score every ``--model`` and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, required=True, help="the pretrained checkpoint")
    parser.add_argument("--heldout", type=Path, required=True, help="held-out dataset: a benchmark's <workdir>/heldout")
    parser.add_argument("--model", action="append", default=[], metavar="NAME=CHECKPOINT", help="a model to score")
    parser.add_argument("--windows", type=int, default=512, help="held-out windows (the benchmark's heldout_windows)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the window choice and the perturbations")
    parser.add_argument("--noise-std", type=float, default=0.5, help="perturbation std (the cpu planner's max_std)")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    reference = load_checkpoint(args.reference)[0].eval()
    batches = heldout_batches(args.heldout, reference.spec, args.windows, args.seed)
    models = {"reference": reference}
    for item in args.model:
        name, _, path = item.partition("=")
        if not name or not path:
            parser.error(f"--model takes NAME=CHECKPOINT, got {item!r}")
        models[name] = load_checkpoint(Path(path))[0].eval()
    rows = {}
    for name, model in models.items():
        latent = evaluate_loss(model, batches, finetune_loss_weights())["consistency"]
        drift = action_effect_drift(reference, model, batches, args.noise_std, args.seed)
        rows[name] = {"latent_error": latent, "action_effect_drift": drift}
        print(f"{name:<24} latent_error {latent:.5f}  action_effect_drift {drift:.6f}")
    out = {"reference": str(args.reference), "heldout": str(args.heldout), "windows": args.windows,
           "seed": args.seed, "noise_std": args.noise_std, "models": {n: str(p) for n, _, p in
                                                                       (m.partition("=") for m in args.model)},
           "rows": rows}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
