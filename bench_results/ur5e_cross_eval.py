"""``UR5E_CROSS_EVAL.md``: live-adapted and benchmark-adapted UR5e models, each on the other's episodes.

``run ARM...`` evaluates arms ``MODEL@EPISODES`` (MODEL: ``shipped``, ``live_r1``..``live_r3``,
``bench_s0``..``bench_s2``; EPISODES: ``bench`` = the benchmark's 60 evaluation episodes, run as
``simdist bench adaptation`` runs them; ``demo`` = the demo's 20 fixed episodes, run as ``simdist demo`` runs them)
into ``ur5e_cross_eval/<arm>.json``. ``read`` writes the protocol's readings to ``ur5e_cross_eval.json``.

Run: ``python bench_results/ur5e_cross_eval.py run shipped@bench live_r1@bench ...`` then ``... read``
"""

import json
import sys
from pathlib import Path

from eval_arms import paired, pooled_ci
from ur5e_tie_after_adapting import bench_episodes as bench_episode_metrics

HERE = Path(__file__).parent
ROOT = HERE.parent
TASK, SECONDS = "ur5e/peg_mild_shift", 15.0
MODELS = {"shipped": ROOT / "checkpoints" / "ur5e",
          **{f"live_r{i}": HERE / f"adapted_ur5e_mild_shift_live_r{i}" for i in (1, 2, 3)},
          **{f"bench_s{s}": HERE / f"adapted_ur5e_mild_shift_live_schedule_seed{s}" for s in (0, 1, 2)}}
BENCH_SEEDS, DEMO_EPISODES = (0, 1, 2), 20
OUT = HERE / "ur5e_cross_eval"


def bench_episodes(checkpoint: Path) -> list[float]:
    """Success of each of the benchmark's 60 evaluation episodes (seeds 0, 1, 2 x 20), as the benchmark runs them."""
    return [e["success"] for e in bench_episode_metrics(checkpoint, "1000", TASK, BENCH_SEEDS)]


def demo_episodes(checkpoint: Path) -> list[float]:
    """Success of each of the demo's 20 fixed episodes (seeds 1001..), as the demo's fixed-seed evaluation runs them."""
    from simdist_ros.demo import EVAL_FIRST_SEED
    from simdist_ros.parity import in_process

    result = in_process(TASK, checkpoint, DEMO_EPISODES, SECONDS, EVAL_FIRST_SEED)
    return [float(e["success"]) for e in result["per_episode"]]


def run(arms: list[str]) -> None:
    """Evaluate each arm and write its per-episode success."""
    import torch

    torch.set_num_threads(1)
    OUT.mkdir(exist_ok=True)
    for arm in arms:
        model, episodes = arm.split("@")
        success = (bench_episodes if episodes == "bench" else demo_episodes)(MODELS[model])
        (OUT / f"{arm}.json").write_text(json.dumps({"arm": arm, "checkpoint": str(MODELS[model].relative_to(ROOT)),
                                                     "success": success}) + "\n")
        print(arm, sum(success) / len(success))


def read() -> None:
    """The protocol's readings from the arms' files and the two runs they are checked against."""
    arm = {p.stem: json.loads(p.read_text())["success"] for p in OUT.glob("*.json")}
    bench = json.loads((HERE / "adaptation_ur5e_peg_mild_shift_live_schedule.json").read_text())
    zero = bench["results"]["zero_shot"]["episode_metric_per_seed"][0]  # per seed, 20 episodes
    demo = json.loads((HERE / "demo_ur5e_peg_mild_shift_20261205" / "summary.json").read_text())
    demo_shipped = [float(e["success"]) for e in demo["fixed_seed_evaluation"]["shipped"]["per_episode"]]
    live = [arm[f"live_r{i}@bench"] for i in (1, 2, 3)]
    benchmark = [arm[f"bench_s{s}@demo"] for s in BENCH_SEEDS]
    out = {"protocol": "bench_results/UR5E_CROSS_EVAL.md",
           "checks": {"shipped_on_bench_as_benchmark_zero_shot": arm["shipped@bench"] == [x for s in zero for x in s],
                      "shipped_on_demo_as_demo_shipped": arm["shipped@demo"] == demo_shipped},
           "success": {"shipped_on_bench": pooled_ci([arm["shipped@bench"]]), "live_on_bench": pooled_ci(live),
                       "shipped_on_demo": pooled_ci([arm["shipped@demo"]]), "bench_on_demo": pooled_ci(benchmark),
                       **{k: round(sum(v) / len(v), 3) for k, v in sorted(arm.items())}},
           "live_minus_shipped_on_bench": paired(live, [arm["shipped@bench"]] * 3),
           "bench_minus_shipped_on_demo": paired(benchmark, [arm["shipped@demo"]] * 3)}
    (HERE / "ur5e_cross_eval.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    {"run": lambda: run(sys.argv[2:]), "read": read}[sys.argv[1]]()
