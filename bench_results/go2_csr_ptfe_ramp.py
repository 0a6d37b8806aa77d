"""Reading of ``GO2_CSR_PTFE_RAMP.md``: the PTFE models with a 4-s command ramp on the confirmation's episodes.

Reads the four ramp runs (``bench_results/go2_csr_ptfe_ramp/<name>_ramp4.json``) and the same models' runs without
a ramp on the same episodes (``bench_results/go2_csr_ptfe_ft3000_confirm/<name>_plain.json``), and writes
``bench_results/go2_csr_ptfe_ramp.json``. Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/go2_csr_ptfe_ramp.py``.
"""

import json
from pathlib import Path

from eval_arms import early_falls, gain_verdict, progress_against_zero_shot, ratio_of_pooled_means, rounded_difference
from go2_csr_ptfe_ft3000 import TASK, load_plain
from go2_csr_ptfe_graph import CONFIRM, MODELS
from simdist_core.eval.stats import episode_values

DIR = Path("bench_results/go2_csr_ptfe_ramp")
RAMP_S = 4.0
ADAPTED = [name for name in MODELS if name != "zero_shot"]


def load_ramp(name: str) -> dict:
    """One model's run with the ramp, checked against the protocol.

    Raises:
        SystemExit: the report is not the protocol's run.
    """
    path = DIR / f"{name}_ramp4.json"
    report = load_plain(path, 60)
    if report["command_ramp_s"] != RAMP_S or report["checkpoint"] != MODELS[name]:  # (reports do not store seeds)
        raise SystemExit(f"{path}: not the protocol's run")
    return report


def main() -> None:
    """The three readings of the protocol, printed and written."""
    ramp = {name: load_ramp(name) for name in MODELS}
    plain = {name: load_plain(CONFIRM / f"{name}_plain.json", 60) for name in MODELS}
    rows, diffs, zero = progress_against_zero_shot(ramp, TASK)
    ratio = ratio_of_pooled_means(diffs, zero)
    falls = {name: early_falls(report["per_episode"]) for name, report in ramp.items()}
    share = rounded_difference([falls[name] for name in ADAPTED], [falls["zero_shot"]] * len(ADAPTED))
    values = {side: {name: episode_values(r["per_episode"], TASK) for name, r in reports.items()}
              for side, reports in (("ramp", ramp), ("plain", plain))}  # fmt: skip
    out = {
        "protocol": "bench_results/GO2_CSR_PTFE_RAMP.md", "seeds": [67000, 67059], "command_ramp_s": RAMP_S,
        "with_ramp": {**rows, "ratio_of_pooled_means": ratio},
        "verdict": gain_verdict(rows["pooled_minus_zero_shot"], ratio, "adaptation wins with the ramp",
                                "walks further with the ramp, short of 1.5x", "walks less with the ramp",
                                "not shown with the ramp"),
        "early_fall_share_adapted_minus_zero_shot": share,
        "start_harm": "gone" if share["ci95"][0] <= 0 else "still there",
        "ramp_minus_no_ramp": {
            "zero_shot": rounded_difference([values["ramp"]["zero_shot"]], [values["plain"]["zero_shot"]]),
            "adapted_pooled": rounded_difference([values["ramp"][name] for name in ADAPTED],
                                                 [values["plain"][name] for name in ADAPTED]),
        },
    }
    Path("bench_results/go2_csr_ptfe_ramp.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
