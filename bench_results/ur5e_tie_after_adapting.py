"""``UR5E_TIE_AFTER_ADAPTING.md``: the shipped and live-adapted UR5e models at the deployed tie (1000) and at 500.

``run ARM...`` evaluates arms ``MODEL@LAMBDA`` (MODEL: ``shipped``, ``live_r1``..``live_r3``) on the adaptation
benchmark's 60 evaluation episodes of ``ur5e/peg_mild_shift`` into ``ur5e_tie_after_adapting/<arm>.json`` (success
and funnel stages per episode). ``read`` writes the protocol's readings to ``ur5e_tie_after_adapting.json``.

Run: ``python bench_results/ur5e_tie_after_adapting.py run shipped@500 live_r1@500 ...`` then ``... read``
"""

import json
import sys
from pathlib import Path

from eval_arms import FUNNEL, paired, pooled_ci

HERE = Path(__file__).parent
ROOT = HERE.parent
TASK, SECONDS, BENCH_SEEDS = "ur5e/peg_mild_shift", 15.0, (0, 1, 2)
MODELS = {"shipped": ROOT / "checkpoints" / "ur5e",
          **{f"live_r{i}": HERE / f"adapted_ur5e_mild_shift_live_r{i}" for i in (1, 2, 3)}}
LIVE = ("live_r1", "live_r2", "live_r3")
OUT = HERE / "ur5e_tie_after_adapting"


def bench_episodes(checkpoint: Path, prior_weight: str, task: str = TASK, seeds: tuple = BENCH_SEEDS,
                   planner: dict | None = None, **eval_options: object) -> list[dict]:
    """Success and funnel stages of the benchmark's evaluation episodes of ``seeds`` (20 each), run as it runs them.

    ``planner``: more planner overrides; ``eval_options``: more ``EvalConfig`` fields (``compensate_delay``,
    ``robot_latency_steps``).
    """
    from simdist_core.checkpoint import load_checkpoint
    from simdist_core.eval.adaptation import EVAL_STREAM, episode_seed
    from simdist_core.eval.closed_loop import EvalConfig, evaluate

    model = load_checkpoint(checkpoint)[0].eval()
    out = []
    for seed in seeds:
        cfg = EvalConfig(task=task, episodes=20, seconds=SECONDS, seed=episode_seed(EVAL_STREAM, seed), preset="cpu",
                         **eval_options)
        per_episode = evaluate(model, cfg, planner_overrides={"prior_weight": prior_weight, **(planner or {})})[
            "per_episode"]
        out += [{k: float(e[k]) for k in FUNNEL} for e in per_episode]
    return out


def run(arms: list[str]) -> None:
    """Evaluate each arm and write its per-episode success and funnel."""
    import torch

    torch.set_num_threads(1)
    OUT.mkdir(exist_ok=True)
    for arm in arms:
        model, prior_weight = arm.split("@")
        episodes = bench_episodes(MODELS[model], prior_weight)
        (OUT / f"{arm}.json").write_text(json.dumps({"arm": arm, "checkpoint": str(MODELS[model].relative_to(ROOT)),
                                                     "prior_weight": float(prior_weight), "episodes": episodes}) + "\n")
        print(arm, sum(e["success"] for e in episodes) / len(episodes))


def read() -> None:
    """The protocol's readings from the arms' files."""
    arms = {p.stem: json.loads(p.read_text())["episodes"] for p in OUT.glob("*.json")}
    success = {a: [e["success"] for e in eps] for a, eps in arms.items()}
    cross = {p.stem: json.loads(p.read_text())["success"] for p in (HERE / "ur5e_cross_eval").glob("*@bench.json")}

    def live(tie: int) -> list[list[float]]:
        return [success[f"{m}@{tie}"] for m in LIVE]

    out = {"protocol": "bench_results/UR5E_TIE_AFTER_ADAPTING.md", "task": TASK,
           "checks": {f"{m}@1000_as_cross_eval": success[f"{m}@1000"] == cross[f"{m}@bench"]
                      for m in ("shipped", *LIVE)},
           "success": {"shipped@1000": pooled_ci([success["shipped@1000"]]), "live@1000": pooled_ci(live(1000)),
                       "shipped@500": pooled_ci([success["shipped@500"]]), "live@500": pooled_ci(live(500)),
                       **{a: round(sum(v) / len(v), 3) for a, v in sorted(success.items())}},
           "funnel": {a: {k: int(sum(e[k] for e in eps)) for k in FUNNEL} for a, eps in sorted(arms.items())},
           "live500_minus_shipped1000": paired(live(500), [success["shipped@1000"]] * 3),
           "shipped500_minus_shipped1000": paired([success["shipped@500"]], [success["shipped@1000"]]),
           "live500_minus_shipped500": paired(live(500), [success["shipped@500"]] * 3),
           "live500_minus_live1000": paired(live(500), live(1000))}
    (HERE / "ur5e_tie_after_adapting.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    {"run": lambda: run(sys.argv[2:]), "read": read}[sys.argv[1]]()
