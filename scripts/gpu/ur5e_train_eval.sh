#!/usr/bin/env bash
# A UR5e model (peg, or table leg with TASK=table_leg) pretrained on a lent GPU and compared with the shipped one,
# as two device commands; the second waits for the training that the first leaves running:
#
#   OUT=/dir NAME=x scripts/gpu/ur5e_train_eval.sh train   # generate ROWS rows, start pretraining in the background,
#                                                           # evaluate the shipped checkpoint meanwhile on spare cores
#   OUT=/dir NAME=x scripts/gpu/ur5e_train_eval.sh eval    # wait for the new checkpoint, evaluate it on the same
#                                                           # seeds, pack checkpoint, logs and reports into $OUT
#
# The recipe is checkpoints/ur5e_v1's (checkpoints/README.md) with ROWS rows, PRETRAIN_SET (extra
# `--set key=value` words for `simdist pretrain`) and GENERATE_SET (the same for `simdist generate`: task
# overrides such as shift.latency_steps_max=2). BASE is the checkpoint it is compared with (default the deployed
# checkpoints/ur5e; the runs below compared with what is now checkpoints/ur5e_v1, so BASE=checkpoints/ur5e_v1
# repeats them). Runs so far, each with its protocol:
#   NAME=data_scale ROWS=240000                                          bench_results/UR5E_DATA_SCALE.md
#   NAME=command_frame ROWS=160000 PRETRAIN_SET="model.command_frame=true" bench_results/UR5E_COMMAND_FRAME.md
#     (that checkpoint is the deployed checkpoints/ur5e since 2026-12-04)
#   TASK=table_leg NAME=table_leg ROWS=160000 PRETRAIN_SET="model.command_frame=true"  bench_results/UR5E_TABLE_LEG.md
#   NAME=latency_randomised ROWS=160000 PRETRAIN_SET="model.command_frame=true" \
#     GENERATE_SET="shift.latency_steps_max=2"                       bench_results/UR5E_LATENCY_RANDOMISED.md
# TASK (peg or table_leg) is both the task the data are generated in and the one evaluated (ur5e/$TASK, at most
# EPISODE_S seconds per episode: 15 for the peg, 25 for the table leg, the tasks' own episode lengths).
# Evaluation: the planner the UR5e graph deploys (the checkpoint's MPPI with prior_weight 1000), <= EPISODE_S s per
# episode, seeds 1000-1019 and 2000-2039 (the seeds of the prior_weight runs), EPISODES_PER_JOB per process;
# the two are joined by scripts/diagnostics/eval_pairs.py into $OUT/ur5e_$NAME.json.
# A machine without MuJoCo gets it from wheels in .whl/ (and EGL from .gl/*.deb), as the device tool's notes say.
# Dry run on a CPU: DEVICE=cpu ROWS=3000 UPDATES=20 WORKERS=2 SEEDS="1000" EPISODES_PER_JOB=1 PYTHON=.venv/bin/python
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT to the folder for the results}
STAGE=${1:?train or eval}
NAME=${NAME:?name of the run (data_scale, command_frame, ...)}
TASK=${TASK:-peg}
case "$TASK" in peg) EPISODE_S=${EPISODE_S:-15} ;; table_leg) EPISODE_S=${EPISODE_S:-25} ;;
  *) echo "TASK must be peg or table_leg, not $TASK" >&2; exit 2 ;; esac
PRETRAIN_SET=${PRETRAIN_SET:-}
GENERATE_SET=${GENERATE_SET:-}
BASE=${BASE:-checkpoints/ur5e}
UPDATES=${UPDATES:-7000}
WORKERS=${WORKERS:-15}
DEVICE=${DEVICE:-cuda}
EPISODES_PER_JOB=${EPISODES_PER_JOB:-5}
SEEDS=${SEEDS:-"1000 1005 1010 1015 2000 2005 2010 2015 2020 2025 2030 2035"}
PARALLEL=${PARALLEL:-16}
WAIT_S=${WAIT_S:-540}          # the train stage returns after this long; training goes on
WORK=${WORK:-/tmp/ur5e_$NAME}
PY=${PYTHON:-python3}
export MUJOCO_GL=egl PYTHONUNBUFFERED=1
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }

if [ -d .gl ] && ! "$PY" -c "import mujoco" 2>/dev/null; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
if [ -d .whl ] && ! "$PY" -c "import mujoco" 2>/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=src/simdist_core${PYTHONPATH:+:$PYTHONPATH}
simdist() { "$PY" -m simdist_core.cli "$@"; }

# Checkpoint $1 on every seed of SEEDS (EPISODES_PER_JOB episodes from each), $3 processes at a time; the report of
# seed S goes to $WORK/eval/$2_S.json.
eval_jobs() {  # $1 checkpoint, $2 name, $3 parallel processes
  mkdir -p "$WORK/eval"
  for s in $SEEDS; do echo "$s"; done | xargs -P "$3" -I{} sh -c "\"$PY\" -m simdist_core.cli eval --checkpoint $1 \
    --task ur5e/$TASK --preset checkpoint --planner prior_weight=1000 --seconds $EPISODE_S --episodes $EPISODES_PER_JOB \
    --seed {} --json $WORK/eval/$2_{}.json > $WORK/eval/$2_{}.log 2>&1 || echo eval $2 {} failed"
}

if [ "$STAGE" = train ]; then
  ROWS=${ROWS:?rows of data to generate}
  rm -rf "$WORK"; mkdir -p "$WORK"
  "$PY" -c "import mujoco, torch; print('mujoco', mujoco.__version__, 'torch', torch.__version__, \
'cuda', torch.cuda.is_available() and torch.cuda.get_device_name(0))"
  nproc; free -g | head -2
  simdist generate --robot ur5e --task "$TASK" --steps "$ROWS" --out "$WORK/data" --workers "$WORKERS" --seed 0 \
    --no-fsync $(for kv in $GENERATE_SET; do printf -- '--set %s ' "$kv"; done) 2>&1 | tr '\r' '\n' | grep -v "step/s" | tail -5
  echo "generated at $(elapsed) s"
  setsid nohup "$PY" -m simdist_core.cli pretrain --data "$WORK/data" --robot ur5e --out "$WORK/model" \
    --batch 256 --steps "$UPDATES" --no-progress --set device="$DEVICE" --set threads=4 \
    --set resident_data="$([ "$DEVICE" = cpu ] && echo false || echo true)" --set eval_windows=1024 \
    --set optim.warmup_steps=300 --set eval_every=1000 --set log_every=100 --set save_every=500 \
    $(for kv in $PRETRAIN_SET; do printf -- '--set %s ' "$kv"; done) > "$WORK/pretrain.log" 2>&1 < /dev/null &
  # The BASE checkpoint on the same seeds and machine, on the cores the GPU run leaves free.
  setsid nohup bash -c "$(declare -f eval_jobs); PY='$PY' SEEDS='$SEEDS' WORK='$WORK' \
    EPISODES_PER_JOB=$EPISODES_PER_JOB TASK=$TASK EPISODE_S=$EPISODE_S eval_jobs $BASE shipped $((PARALLEL - 4)); \
    touch $WORK/eval/shipped.done" > "$WORK/eval_shipped.log" 2>&1 < /dev/null &
  while [ ! -f "$WORK/model/manifest.json" ] && [ "$(elapsed)" -lt "$WAIT_S" ]; do sleep 10; done
  echo "train stage returns at $(elapsed) s"; tail -3 "$WORK/pretrain.log"; ls "$WORK/eval" | head -40
  exit 0
fi

# eval stage
while [ ! -f "$WORK/model/manifest.json" ]; do
  if ! pgrep -f "simdist_core.cli pretrain" > /dev/null; then echo "pretraining died:"; tail -30 "$WORK/pretrain.log"; break; fi
  sleep 5
done
echo "checkpoint ready at $(elapsed) s"; tail -3 "$WORK/pretrain.log"
while [ ! -f "$WORK/eval/shipped.done" ] && [ "$(elapsed)" -lt 240 ]; do sleep 3; done
[ -f "$WORK/model/manifest.json" ] && eval_jobs "$WORK/model" "$NAME" "$PARALLEL"
echo "evaluated at $(elapsed) s"
tar czf "$OUT/ur5e_$NAME.tgz" -C "$WORK" --ignore-failed-read model eval pretrain.log model.run/train.csv \
  model.run/eval.csv data/dataset.json data/value_fn.json || true
"$PY" scripts/diagnostics/eval_pairs.py "$WORK/eval" --base shipped --new "$NAME" --json "$OUT/ur5e_$NAME.json"
