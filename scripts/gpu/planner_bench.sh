#!/usr/bin/env bash
# The planner on a GPU, in one run: the `reference` preset (450 Gaussian + 22 prior samples x 8 MPPI
# iterations x H 25) and the `cpu` preset, with the reference-size model (random weights: latency
# depends on sizes) and with the shipped Go2 checkpoint; each record also times one H-step rollout with
# the multi-step transformer against the autoregressive MLP. Needs only python3 with torch, numpy and
# safetensors (no ROS, no MuJoCo), so it runs on a bare CUDA machine from a checkout:
#
#   OUT=/some/dir scripts/gpu/planner_bench.sh            # writes planner_*_cuda.json into $OUT
#   DEVICE=cpu TICKS=3 OUT=/tmp/x scripts/gpu/planner_bench.sh   # the same commands on the CPU (a dry run)
#
# Quote the results with the GPU's name (each JSON's machine.cuda) and commit them under bench_results/.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT to the folder for the JSON files}
DEVICE=${DEVICE:-cuda}
TICKS=${TICKS:-200}
PY=${PYTHON:-python3}
export PYTHONPATH=src/simdist_core${PYTHONPATH:+:$PYTHONPATH}
mkdir -p "$OUT"
tag=$([ "$DEVICE" = cpu ] && echo cpu || echo cuda)
bench() { "$PY" -m simdist_core.cli bench planner --device "$DEVICE" --ticks "$TICKS" --warmup 10 "$@"; }
bench --preset reference --json "$OUT/planner_reference_refsize_$tag.json"
bench --preset cpu --json "$OUT/planner_cpu_refsize_$tag.json"
bench --preset reference --checkpoint checkpoints/go2 --json "$OUT/planner_reference_go2_$tag.json"
bench --preset cpu --checkpoint checkpoints/go2 --json "$OUT/planner_cpu_go2_$tag.json"
"$PY" - "$OUT" "$tag" <<'PY'
import json, pathlib, sys
out, tag = pathlib.Path(sys.argv[1]), sys.argv[2]
print(f"{'record':<32}{'rollouts/tick':>14}{'p50 ms':>9}{'p99 ms':>9}{'multistep ms':>14}{'autoregr. ms':>14}")
for path in sorted(out.glob(f"planner_*_{tag}.json")):
    r = json.loads(path.read_text())
    print(f"{path.stem:<32}{r['rollouts_per_tick']:>14}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}"
          f"{r['multistep_ms']:>14.2f}{r['autoregressive_ms']:>14.2f}")
print("device:", r["machine"]["cuda"] or r["machine"]["cpu"])
PY
