"""Data-parallel pretraining: two CPU processes on the gloo backend (torchrun) end with identical parameters."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from _train_testlib import TINY_OVERRIDES, collect
from safetensors.torch import load_file

REPO = Path(__file__).resolve().parents[2]

# Each rank runs the real PretrainRunner (rank-specific batches, all-reduced gradients) and dumps its weights.
RANK_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from pathlib import Path
    from safetensors.torch import save_file
    from simdist_core.config import apply_overrides, parse_overrides
    from simdist_core.training import distributed as ddp
    from simdist_core.training.pretrain import PretrainConfig, PretrainRunner

    data, out, dump = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    torch.set_num_threads(1)
    cfg = apply_overrides(PretrainConfig(), parse_overrides(sys.argv[4:]))
    info = ddp.init_from_env("cpu")
    runner = PretrainRunner(data, "go2", out, cfg, info)
    first = runner.train.sample()["actions"].sum().item()
    init = {"_init." + k: v.detach().clone().contiguous() for k, v in runner.model.state_dict().items()}
    runner.learn(progress=False)
    state = {k: v.contiguous() for k, v in runner.model.state_dict().items()}
    state.update(init)
    state["_first_batch_actions_sum"] = torch.tensor([first])
    save_file(state, str(dump / f"rank{info.rank}.safetensors"))
    ddp.shutdown(info)
""")


@pytest.mark.timeout(600)
def test_two_process_gloo_run_keeps_ranks_identical(tmp_path):
    torch.set_num_threads(1)
    data = collect(tmp_path / "data", "go2/flat", episodes=4, seed=7)
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone", str(script),
           str(data.path), str(tmp_path / "ckpt"), str(tmp_path), "steps=6", "batch_size=8", "eval_every=3",
           "eval_windows=16", "save_every=3", "optim.warmup_steps=2", *TINY_OVERRIDES]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r0, r1 = (load_file(str(tmp_path / f"rank{r}.safetensors")) for r in (0, 1))
    # ranks saw different data ...
    assert r0.pop("_first_batch_actions_sum") != r1.pop("_first_batch_actions_sum")
    # ... yet end with bit-identical parameters (same init via broadcast, same averaged gradients)
    assert r0.keys() == r1.keys()
    for key in r0:
        assert torch.equal(r0[key], r1[key]), f"{key} differs between ranks"
    # and training moved them away from the (broadcast) initial weights
    moved = [k for k in r0 if not k.startswith("_init.") and not torch.equal(r0[k], r0["_init." + k])]
    assert any(k.startswith("dynamics.") for k in moved) and any(k.startswith("encoder.") for k in moved)
    assert (tmp_path / "ckpt.run" / "optimizer.safetensors").is_file()  # rank 0 wrote the resume state
