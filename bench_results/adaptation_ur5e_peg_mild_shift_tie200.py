"""Readings of ``UR5E_MILD_SHIFT_TIE200_ADAPTATION.md``: adaptation on the milder UR5e stand-in with prior_weight 200.

Reads the merged report ``adaptation_ur5e_peg_mild_shift_tie200.json`` (zero-shot, dynamics-only and full finetuning,
3 seeds x 20 evaluation episodes, collection and evaluation with prior_weight 200) and, for the comparison with the
deployed planner, the tight-tie run ``adaptation_ur5e_peg_mild_shift_cf.json`` (prior_weight 1000, the same
evaluation episodes: same seeds, seed scheme 2). Writes the protocol's readings: success with 95 % intervals, the
paired differences (two-level bootstrap over seeds and episodes) with wins, losses and a two-sided sign test.
Writes ``adaptation_ur5e_peg_mild_shift_tie200_readings.json``.

With ``shifted``, the same readings for the harder stand-in (``UR5E_PEG_SHIFTED_TIE200_ADAPTATION.md``:
``adaptation_ur5e_peg_shifted_tie200.json`` against ``adaptation_ur5e_peg_shifted_cf.json``, dynamics-only only) →
``adaptation_ur5e_peg_shifted_tie200_readings.json``.

With ``vbranch``, the same readings for the run with the continuation-trained value head
(``UR5E_MILD_SHIFT_TIE200_VBRANCH_ADAPTATION.md``), also paired with the deployed head's run above →
``adaptation_ur5e_peg_mild_shift_tie200_vbranch_readings.json``.

With ``voff``, the run without a terminal value (``UR5E_MILD_SHIFT_TIE200_VALUE_OFF_ADAPTATION.md``), paired with
the deployed head's run the same way → ``adaptation_ur5e_peg_mild_shift_tie200_voff_readings.json``.

With ``vcap``, the run with the terminal value capped at the prior plan's value (``UR5E_VALUE_CAP.md``, part 2),
paired with the deployed head's run the same way → ``adaptation_ur5e_peg_mild_shift_tie200_vcap_readings.json``.

Run: ``python bench_results/adaptation_ur5e_peg_mild_shift_tie200.py [shifted|vbranch|voff|vcap]``
"""

import json
import sys
from pathlib import Path

from eval_arms import paired
from simdist_core.eval.stats import cluster_mean_ci

HERE = Path(__file__).parent
RUNS = {  # stand-in: (the prior_weight 200 run, the deployed planner's run on the same episodes, protocol)
    "mild": ("adaptation_ur5e_peg_mild_shift_tie200", "adaptation_ur5e_peg_mild_shift_cf",
             "UR5E_MILD_SHIFT_TIE200_ADAPTATION.md"),
    "shifted": ("adaptation_ur5e_peg_shifted_tie200", "adaptation_ur5e_peg_shifted_cf",
                "UR5E_PEG_SHIFTED_TIE200_ADAPTATION.md"),
    "vbranch": ("adaptation_ur5e_peg_mild_shift_tie200_vbranch", "adaptation_ur5e_peg_mild_shift_cf",
                "UR5E_MILD_SHIFT_TIE200_VBRANCH_ADAPTATION.md"),
    "voff": ("adaptation_ur5e_peg_mild_shift_tie200_voff", "adaptation_ur5e_peg_mild_shift_cf",
             "UR5E_MILD_SHIFT_TIE200_VALUE_OFF_ADAPTATION.md"),
    "vcap": ("adaptation_ur5e_peg_mild_shift_tie200_vcap", "adaptation_ur5e_peg_mild_shift_cf", "UR5E_VALUE_CAP.md"),
}
OLD_HEAD = {key: "adaptation_ur5e_peg_mild_shift_tie200" for key in ("vbranch", "voff", "vcap")}
"""Runs that are also set beside the same planner with the deployed value head (same evaluation episodes)."""


def episodes(report: dict, method: str, minutes: float) -> list[list[float]]:
    """Per seed, per evaluation episode success of ``method`` at ``minutes``."""
    res = report["results"][method]
    return res["episode_metric_per_seed"][res["minutes"].index(minutes)]


def main() -> None:
    """Write the readings and print them."""
    key = sys.argv[1] if len(sys.argv) > 1 else "mild"
    name, tight_name, protocol = RUNS[key]
    loose, tight = (json.loads((HERE / f"{n}.json").read_text()) for n in (name, tight_name))
    if loose["seeds"] != tight["seeds"] or loose["seed_scheme"] != tight["seed_scheme"]:
        raise ValueError("the two runs do not share their evaluation episodes")
    last = loose["config"]["minutes"][-1]
    series = {"zero_shot_tie200": episodes(loose, "zero_shot", 0.0),
              "dynamics_only_tie200": episodes(loose, "dynamics_only", last),
              "zero_shot_tie1000_deployed": episodes(tight, "zero_shot", 0.0),
              "dynamics_only_tie1000": episodes(tight, "dynamics_only", last)}
    if "full_finetune" in loose["results"]:
        series["full_finetune_tie200"] = episodes(loose, "full_finetune", last)
    out = {"protocol": f"bench_results/{protocol}", "minutes": last, "seeds": loose["seeds"], "success": {}}
    for label, s in series.items():
        mean, low, high = cluster_mean_ci(s)
        out["success"][label] = {"rate": mean, "ci95": [low, high]}
    zs = out["success"]["zero_shot_tie200"]["rate"]
    out["dynamics_only_over_zero_shot"] = out["success"]["dynamics_only_tie200"]["rate"] / zs if zs else None
    out["dynamics_only_minus_zero_shot"] = paired(series["dynamics_only_tie200"], series["zero_shot_tie200"])
    if "full_finetune_tie200" in series:
        out["dynamics_only_minus_full_finetune"] = paired(series["dynamics_only_tie200"],
                                                          series["full_finetune_tie200"])
    out["dynamics_only_tie200_minus_deployed_zero_shot"] = paired(series["dynamics_only_tie200"],
                                                                  series["zero_shot_tie1000_deployed"])
    if key in OLD_HEAD:
        base = json.loads((HERE / f"{OLD_HEAD[key]}.json").read_text())
        if base["seeds"] != loose["seeds"] or base["seed_scheme"] != loose["seed_scheme"]:
            raise ValueError("the run with the deployed head does not share the evaluation episodes")
        out["dynamics_only_minus_dynamics_only_deployed_head"] = paired(
            series["dynamics_only_tie200"], episodes(base, "dynamics_only", last))
        out["zero_shot_minus_zero_shot_deployed_head"] = paired(series["zero_shot_tie200"],
                                                                episodes(base, "zero_shot", 0.0))
    out["latent_error_ratio_zero_shot_over_dynamics_only"] = (
        loose["summary"]["dynamics_only"]["latent_error_ratio_zero_shot_over_method"])
    (HERE / f"{name}_readings.json").write_text(json.dumps(out, indent=1) + "\n")
    for label, s in out["success"].items():
        print(f"{label:28s} {s['rate']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]")
    for key in ("dynamics_only_minus_zero_shot", "dynamics_only_minus_full_finetune",
                "dynamics_only_tie200_minus_deployed_zero_shot", "dynamics_only_minus_dynamics_only_deployed_head",
                "zero_shot_minus_zero_shot_deployed_head"):
        if key not in out:
            continue
        d = out[key]
        print(f"{key:46s} {d['difference']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] "
              f"wins {d['wins']} losses {d['losses']} p={d['sign_test_p']:.2g}")
    print("ratio dynamics-only / zero-shot:", out["dynamics_only_over_zero_shot"],
          "latent error ratio:", out["latent_error_ratio_zero_shot_over_dynamics_only"])


if __name__ == "__main__":
    main()
