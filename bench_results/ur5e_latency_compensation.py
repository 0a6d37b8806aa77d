"""``UR5E_LATENCY_COMPENSATION.md``: the deployed UR5e planner told the robot's command latency, zero-shot and adapted.

``+pac`` arms (``UR5E_LATENCY_PRIOR_AFTER.md``): the same with ``--planner prior_after_committed=true``.

``run SET:ARM...`` evaluates arms ``MODEL@1000+latL`` (the deployed tie; ``+latL``: ``compensate_delay`` with
``robot_latency_steps`` L; no suffix: as deployed) on set ``a`` (``ur5e/peg_mild_shift``, latency 1; MODEL
``shipped``, ``live_r1``..``live_r3``) or ``c`` (``ur5e/peg_shifted``, latency 2; MODEL ``shipped``,
``shifted_s0``..``shifted_s2``), the 60 episodes of ``ur5e_tie_confirm.py``'s sets of the same names, into
``ur5e_tie_confirm/<set>_<arm>.json`` beside the uncompensated arms already there. ``read`` writes the readings to
``ur5e_latency_compensation.json``.

Run: ``python bench_results/ur5e_latency_compensation.py run a:shipped@1000+lat1 ...`` then ``... read``
"""

import json
import sys
from pathlib import Path

from eval_arms import FUNNEL, paired, pooled_ci
from ur5e_tie_after_adapting import LIVE, bench_episodes
from ur5e_tie_confirm import MODELS, OUT, SETS, SHIFTED

HERE = Path(__file__).parent
ROOT = HERE.parent
LATENCY = {"a": 1, "c": 2}
"""The task's ``shift.latency_steps`` (``simdist_core.sim.ur5e_tasks``): what a measurement would give."""


def run(arms: list[str]) -> None:
    """Evaluate each arm and write its per-episode success and funnel."""
    import torch

    torch.set_num_threads(1)
    OUT.mkdir(exist_ok=True)
    for item in arms:
        which, arm = item.split(":")
        model, _, rest = arm.partition("@")
        rest, pac, _ = rest.partition("+pac")  # UR5E_LATENCY_PRIOR_AFTER.md: the prior proposes after the commands
        prior_weight, _, lat = rest.partition("+lat")
        latency = int(lat) if lat else 0
        if pac and not latency:
            raise SystemExit(f"{item}: +pac needs +latL")
        if latency not in (0, LATENCY[which]):
            raise SystemExit(f"{item}: set {which} has latency {LATENCY[which]}")
        task, seeds = SETS[which]
        episodes = bench_episodes(MODELS[model], prior_weight, task, seeds,
                                  planner={"prior_after_committed": "true"} if pac else None,
                                  compensate_delay=bool(latency), robot_latency_steps=latency)
        (OUT / f"{which}_{arm}.json").write_text(json.dumps(
            {"arm": arm, "task": task, "eval_seeds": list(seeds), "checkpoint": str(MODELS[model].relative_to(ROOT)),
             "prior_weight": float(prior_weight), "compensate_delay": bool(latency), "robot_latency_steps": latency,
             "prior_after_committed": bool(pac),
             "episodes": episodes}) + "\n")
        print(item, sum(e["success"] for e in episodes) / len(episodes))


def read() -> None:
    """The protocol's readings from the arms' files."""
    def success(name: str) -> list[float]:
        return [e["success"] for e in json.loads((OUT / f"{name}.json").read_text())["episodes"]]

    out: dict = {"protocol": "bench_results/UR5E_LATENCY_COMPENSATION.md", "success": {}, "funnel": {}}
    for which, adapted_models in (("a", LIVE), ("c", SHIFTED)):
        lat = f"+lat{LATENCY[which]}"
        shipped, shipped_c = success(f"{which}_shipped@1000"), success(f"{which}_shipped@1000{lat}")
        adapted_c = [success(f"{which}_{m}@1000{lat}") for m in adapted_models]
        names = [f"{which}_shipped@1000", f"{which}_shipped@1000{lat}", *(f"{which}_{m}@1000{lat}"
                                                                          for m in adapted_models)]
        plain = [f"{which}_{m}@1000" for m in adapted_models]
        have_plain = all((OUT / f"{n}.json").is_file() for n in plain)
        if have_plain:
            names += plain
        out["success"].update({n: pooled_ci([success(n)]) for n in names[:2]})
        out["success"][f"{which}_adapted@1000{lat}"] = pooled_ci(adapted_c)
        out["funnel"].update({n: {k: int(sum(e[k] for e in json.loads((OUT / f"{n}.json").read_text())["episodes"]))
                                  for k in FUNNEL} for n in names})
        out[f"{which}_R1_shipped_compensated_minus_shipped"] = paired([shipped_c], [shipped])
        out[f"{which}_R2_adapted_compensated_minus_shipped_compensated"] = paired(adapted_c, [shipped_c] * 3)
        out[f"{which}_R3_adapted_compensated_minus_shipped"] = paired(adapted_c, [shipped] * 3)
        if have_plain:
            adapted = [success(n) for n in plain]
            out["success"][f"{which}_adapted@1000"] = pooled_ci(adapted)
            out[f"{which}_R4_adapted_compensated_minus_adapted"] = paired(adapted_c, adapted)
            # Not a reading of the protocol: the adapted models against the shipped one, both as deployed.
            out[f"{which}_observed_adapted_minus_shipped"] = paired(adapted, [shipped] * 3)
        pac = [f"{which}_{m}@1000{lat}+pac" for m in ("shipped", *adapted_models)]
        if all((OUT / f"{n}.json").is_file() for n in pac):  # UR5E_LATENCY_PRIOR_AFTER.md
            shipped_p, adapted_p = success(pac[0]), [success(n) for n in pac[1:]]
            out["success"][pac[0]] = pooled_ci([shipped_p])
            out["success"][f"{which}_adapted@1000{lat}+pac"] = pooled_ci(adapted_p)
            out["funnel"].update({n: {k: int(sum(e[k] for e in json.loads((OUT / f"{n}.json").read_text())[
                "episodes"])) for k in FUNNEL} for n in pac})
            out[f"{which}_P1_shipped_pac_minus_shipped_compensated"] = paired([shipped_p], [shipped_c])
            out[f"{which}_P2_shipped_pac_minus_shipped"] = paired([shipped_p], [shipped])
            out[f"{which}_P3_adapted_pac_minus_shipped_pac"] = paired(adapted_p, [shipped_p] * 3)
            out[f"{which}_P4_adapted_pac_minus_shipped"] = paired(adapted_p, [shipped] * 3)
    (HERE / "ur5e_latency_compensation.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "funnel"}, indent=1))


if __name__ == "__main__":
    {"run": lambda: run(sys.argv[2:]), "read": read}[sys.argv[1]]()
