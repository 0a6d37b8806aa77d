"""``UR5E_TIE_CONFIRM.md``: the looser tie after adapting on new episodes (A) and on the harder shifted peg (B).

``run SET:ARM...`` evaluates arms ``MODEL@LAMBDA`` of set ``a`` (``ur5e/peg_mild_shift``, 60 new episodes; MODEL
``shipped``, ``live_r1``..``live_r3``) or ``b`` (``ur5e/peg_shifted``, the benchmark's 60; MODEL ``shipped``,
``shifted_s0``..``shifted_s2``) into ``ur5e_tie_confirm/<set>_<arm>.json``. ``read`` writes the readings to
``ur5e_tie_confirm.json``.

Run: ``python bench_results/ur5e_tie_confirm.py run a:live_r1@500 b:shipped@1000 ...`` then ``... read``
"""

import json
import sys
from pathlib import Path

from eval_arms import FUNNEL, paired, pooled_ci
from ur5e_tie_after_adapting import LIVE, bench_episodes

HERE = Path(__file__).parent
ROOT = HERE.parent
SETS = {"a": ("ur5e/peg_mild_shift", (3, 4, 5)), "b": ("ur5e/peg_shifted", (0, 1, 2)),
        "c": ("ur5e/peg_shifted", (3, 4, 5))}  # c: UR5E_TIE_SHIFTED_NEW.md
SHIFTED = ("shifted_s0", "shifted_s1", "shifted_s2")
MODELS = {"shipped": ROOT / "checkpoints" / "ur5e",
          **{f"live_r{i}": HERE / f"adapted_ur5e_mild_shift_live_r{i}" for i in (1, 2, 3)},
          **{f"shifted_s{s}": HERE / f"adapted_ur5e_peg_shifted_live_schedule_seed{s}" for s in (0, 1, 2)},
          "latrand": HERE / "ur5e_latency_randomised" / "model"}  # UR5E_LATENCY_RANDOMISED.md (its GPU run)
OUT = HERE / "ur5e_tie_confirm"


def run(arms: list[str]) -> None:
    """Evaluate each arm and write its per-episode success and funnel."""
    import torch

    torch.set_num_threads(1)
    OUT.mkdir(exist_ok=True)
    for item in arms:
        which, arm = item.split(":")
        model, prior_weight = arm.split("@")
        task, seeds = SETS[which]
        episodes = bench_episodes(MODELS[model], prior_weight, task, seeds)
        (OUT / f"{which}_{arm}.json").write_text(json.dumps(
            {"arm": arm, "task": task, "eval_seeds": list(seeds), "checkpoint": str(MODELS[model].relative_to(ROOT)),
             "prior_weight": float(prior_weight), "episodes": episodes}) + "\n")
        print(item, sum(e["success"] for e in episodes) / len(episodes))


def read() -> None:
    """The protocol's readings from the arms' files."""
    arms = {p.stem: json.loads(p.read_text())["episodes"] for p in OUT.glob("*.json")}
    s = {a: [e["success"] for e in eps] for a, eps in arms.items()}
    first = {p.stem: [e["success"] for e in json.loads(p.read_text())["episodes"]]
             for p in (HERE / "ur5e_tie_after_adapting").glob("live_r*.json")}
    bench = json.loads((HERE / "adaptation_ur5e_peg_shifted_live_schedule.json").read_text())["results"]
    zero = [x for seed in bench["zero_shot"]["episode_metric_per_seed"][0] for x in seed]
    final = bench["dynamics_only"]["episode_metric_per_seed"][-1]  # per seed, 20 episodes each

    def group(prefix: str, models: tuple, tie: int) -> list[list[float]]:
        return [s[f"{prefix}_{m}@{tie}"] for m in models]

    live500, live1000 = group("a", LIVE, 500), group("a", LIVE, 1000)
    shifted500, shifted1000 = group("b", SHIFTED, 500), group("b", SHIFTED, 1000)
    out = {"protocol": "bench_results/UR5E_TIE_CONFIRM.md",
           "checks": {"b_shipped@1000_as_benchmark_zero_shot": s["b_shipped@1000"] == zero,
                      **{f"b_shifted_s{k}@1000_as_benchmark_seed{k}": s[f"b_shifted_s{k}@1000"][20 * k:20 * k + 20]
                         == final[k] for k in (0, 1, 2)}},
           "success": {"a_shipped@1000": pooled_ci([s["a_shipped@1000"]]), "a_live@1000": pooled_ci(live1000),
                       "a_live@500": pooled_ci(live500), "b_shipped@1000": pooled_ci([s["b_shipped@1000"]]),
                       "b_shipped@500": pooled_ci([s["b_shipped@500"]]), "b_shifted@1000": pooled_ci(shifted1000),
                       "b_shifted@500": pooled_ci(shifted500),
                       **{a: round(sum(v) / len(v), 3) for a, v in sorted(s.items())}},
           "funnel": {a: {k: int(sum(e[k] for e in eps)) for k in FUNNEL} for a, eps in sorted(arms.items())},
           "A1_live500_minus_shipped1000": paired(live500, [s["a_shipped@1000"]] * 3),
           "A2_live1000_minus_shipped1000": paired(live1000, [s["a_shipped@1000"]] * 3),
           "A3_live500_minus_live1000": paired(live500, live1000),
           "A3_pooled_120_episodes": paired([x + first[f"{m}@500"] for x, m in zip(live500, LIVE, strict=True)],
                                            [x + first[f"{m}@1000"] for x, m in zip(live1000, LIVE, strict=True)]),
           "B1_shifted500_minus_shipped1000": paired(shifted500, [s["b_shipped@1000"]] * 3),
           "B2_shifted500_minus_shipped500": paired(shifted500, [s["b_shipped@500"]] * 3),
           "B3_shifted500_minus_shifted1000": paired(shifted500, shifted1000)}
    (HERE / "ur5e_tie_confirm.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k not in ("funnel",)}, indent=1))


def read_c() -> None:
    """``UR5E_TIE_SHIFTED_NEW.md``: set c's reading (new episodes of the harder shifted peg)."""
    arms = {p.stem: json.loads(p.read_text())["episodes"] for p in OUT.glob("c_*.json")}
    s = {a: [e["success"] for e in eps] for a, eps in arms.items()}
    adapted = [s[f"c_{m}@500"] for m in SHIFTED]
    out = {"protocol": "bench_results/UR5E_TIE_SHIFTED_NEW.md", "task": SETS["c"][0], "eval_seeds": list(SETS["c"][1]),
           "success": {"c_shipped@1000": pooled_ci([s["c_shipped@1000"]]), "c_shifted@500": pooled_ci(adapted),
                       **{a: round(sum(v) / len(v), 3) for a, v in sorted(s.items())}},
           "funnel": {a: {k: int(sum(e[k] for e in eps)) for k in FUNNEL} for a, eps in sorted(arms.items())},
           "shifted500_minus_shipped1000": paired(adapted, [s["c_shipped@1000"]] * 3)}
    (HERE / "ur5e_tie_shifted_new.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    {"run": lambda: run(sys.argv[2:]), "read": read, "read-c": read_c}[sys.argv[1]]()
