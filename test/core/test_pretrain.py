"""Pretraining runner: schedule, optimizer-state round trip, resume from the saved step."""

import json
import math

import numpy as np
import pytest
import torch
from simdist_core.training.common import (
    CsvLog,
    OptimConfig,
    load_optimizer_state,
    lr_at,
    make_optimizer,
    save_optimizer_state,
)


def test_lr_schedule_warms_up_then_decays_to_floor():
    cfg = OptimConfig(lr=1e-3, warmup_steps=10, min_lr_ratio=0.1)
    # warmup: step 0 -> lr/10, step 9 -> lr
    assert lr_at(0, 100, cfg) == pytest.approx(1e-4)
    assert lr_at(9, 100, cfg) == pytest.approx(1e-3)
    # cosine: halfway through the decay span (10 + 45) -> midpoint of lr and floor = 5.5e-4
    assert lr_at(55, 100, cfg) == pytest.approx(5.5e-4)
    assert lr_at(100, 100, cfg) == pytest.approx(1e-4)
    assert lr_at(1000, 100, cfg) == pytest.approx(1e-4)


def test_optim_config_names_bad_field():
    with pytest.raises(ValueError, match="lr"):
        OptimConfig(lr=-1.0)
    with pytest.raises(ValueError, match="min_lr_ratio"):
        OptimConfig(min_lr_ratio=2.0)


def _adam_after_steps(n):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    opt = make_optimizer(list(net.parameters()), OptimConfig(lr=1e-2))
    for i in range(n):
        x = torch.randn(16, 4, generator=torch.Generator().manual_seed(i))
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net, opt


def test_optimizer_state_round_trips_through_safetensors(tmp_path):
    net, opt = _adam_after_steps(3)
    path = tmp_path / "optim.safetensors"
    save_optimizer_state(opt, path, extra={"step": 3})
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["extra"]["step"] == 3
    # a fresh optimizer on a copy of the parameters continues exactly like the original
    net2, _ = _adam_after_steps(0)
    net2.load_state_dict(net.state_dict())
    opt2 = make_optimizer(list(net2.parameters()), OptimConfig(lr=1e-2))
    assert load_optimizer_state(opt2, path)["step"] == 3
    for model, optim in ((net, opt), (net2, opt2)):
        x = torch.ones(16, 4)
        loss = model(x).pow(2).mean()
        optim.zero_grad()
        loss.backward()
        optim.step()
    for a, b in zip(net.parameters(), net2.parameters(), strict=True):
        assert torch.equal(a, b)


def test_optimizer_state_refuses_mismatched_parameters(tmp_path):
    _, opt = _adam_after_steps(1)
    path = tmp_path / "optim.safetensors"
    save_optimizer_state(opt, path, extra={})
    other = make_optimizer([torch.nn.Parameter(torch.zeros(3))], OptimConfig())
    with pytest.raises(ValueError, match="groups"):
        load_optimizer_state(other, path)


def test_csv_log_appends_rows_with_fixed_header(tmp_path):
    log = CsvLog(tmp_path / "m.csv")
    log.write({"step": 1, "loss": 0.5})
    log.write({"step": 2, "loss": 0.25, "extra": 1.0})
    again = CsvLog(tmp_path / "m.csv")  # reopening keeps the header
    again.write({"step": 3, "loss": math.pi})
    lines = (tmp_path / "m.csv").read_text().splitlines()
    assert lines[0] == "step,loss"
    assert len(lines) == 4


# ---- the runner on real data -------------------------------------------------------------------

from _train_testlib import TINY_OVERRIDES, collect  # noqa: E402
from simdist_core.checkpoint import load_checkpoint  # noqa: E402
from simdist_core.training.pretrain import main  # noqa: E402


@pytest.fixture(scope="module")
def go2_data(tmp_path_factory):
    torch.set_num_threads(1)
    return collect(tmp_path_factory.mktemp("pretrain_data"), "go2/flat", episodes=6, seed=3)


def _argv(data, out, steps):
    return ["--data", str(data.path), "--robot", "go2", "--out", str(out), "--steps", str(steps), "--batch", "8",
            "--set", "eval_every=5", "--set", "log_every=5", "--set", "save_every=5", "--set", "eval_windows=16",
            "--set", "optim.warmup_steps=2", "--no-progress", *[a for o in TINY_OVERRIDES for a in ("--set", o)]]


@pytest.mark.timeout(300)
def test_pretrain_writes_checkpoint_with_provenance(go2_data, tmp_path):
    out = tmp_path / "ckpt"
    assert main(_argv(go2_data, out, 10)) == 0
    model, manifest = load_checkpoint(out)
    prov = manifest.extra["provenance"]
    assert prov["dataset_sha256"] == go2_data.checksum()
    assert prov["steps"] == 10 and prov["dataset_steps"] == go2_data.n_steps
    assert prov["config"]["model"]["latent_dim"] == 16 and model.cfg.latent_dim == 16
    assert prov["code_version"]
    assert np.isfinite(manifest.extra["metrics"]["eval/loss"])
    eval_rows = (tmp_path / "ckpt.run" / "eval.csv").read_text().splitlines()
    assert eval_rows[0].startswith("step,eval/") and len(eval_rows) == 3  # header + steps 5 and 10
    assert main(_argv(go2_data, out, 10)) == 2, "an existing checkpoint is never overwritten"


@pytest.mark.timeout(300)
def test_pretrain_resumes_from_saved_step(go2_data, tmp_path):
    import json as _json

    from safetensors.torch import load_file

    first = tmp_path / "a"
    assert main(_argv(go2_data, first, 10)) == 0
    state = tmp_path / "a.run" / "optimizer.json"
    assert _json.loads(state.read_text())["extra"]["step"] == 10
    # The runner picks the state up: step counter, weights and Adam moments round-trip exactly.
    runner = _runner(go2_data, first, 15)
    assert runner.try_resume() and runner.trainer.step == 10
    saved = load_file(str(tmp_path / "a.run" / "model.safetensors"))
    assert all(torch.equal(saved[k], v) for k, v in runner.model.state_dict().items())
    moments = load_file(str(tmp_path / "a.run" / "optimizer.safetensors"))
    opt_state = runner.trainer.optimizer.state_dict()["state"]
    assert torch.equal(opt_state[0]["exp_avg"], moments["state.0.exp_avg"])
    # Running the command again with more steps continues at 10 (log rows 15 only), not from scratch.
    second = tmp_path / "b"
    (tmp_path / "a.run").rename(tmp_path / "b.run")
    assert main(_argv(go2_data, second, 15)) == 0
    rows = (tmp_path / "b.run" / "train.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["5", "10", "15"]
    _, manifest = load_checkpoint(second)
    assert manifest.extra["provenance"]["steps"] == 15


def _runner(data, out, steps):
    from simdist_core.config import apply_overrides, parse_overrides
    from simdist_core.training.distributed import DistInfo
    from simdist_core.training.pretrain import PretrainConfig, PretrainRunner

    overrides = parse_overrides([f"steps={steps}", "batch_size=8", "eval_windows=16", "eval_every=4", "log_every=4",
                                 "save_every=4", "optim.warmup_steps=2", *TINY_OVERRIDES])  # fmt: skip
    return PretrainRunner(data.path, "go2", out, apply_overrides(PretrainConfig(), overrides), DistInfo())


@pytest.mark.timeout(300)
def test_a_stopped_and_resumed_run_makes_the_updates_of_an_uninterrupted_one(go2_data, tmp_path):
    torch.set_num_threads(1)
    whole = _runner(go2_data, tmp_path / "whole", 12)
    whole.learn(progress=False)
    # Stop the second run after update 7 (not a save step), as a SIGTERM would: it saves there and returns early.
    part = _runner(go2_data, tmp_path / "part", 12)
    update = part.trainer.update

    def update_then_ask_to_stop(batch):
        metrics = update(batch)
        part.stop_requested = part.trainer.step == 7
        return metrics

    part.trainer.update = update_then_ask_to_stop
    part.learn(progress=False)
    assert part.trainer.step == 7 and not part.finished
    resumed = _runner(go2_data, tmp_path / "part", 12)
    assert resumed.try_resume() and resumed.trainer.step == 7
    assert resumed.train_seconds == round(part.train_seconds, 3), "the stopped run's training time carries over"
    resumed.learn(progress=False)
    assert resumed.finished
    # Same weights as the uninterrupted run: the resumed sampler drew the batches updates 8-12 would have drawn.
    for name, value in whole.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[name]), name


@pytest.mark.timeout(300)
def test_sigterm_saves_the_state_and_exits_75_and_the_same_command_finishes_the_run(go2_data, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from safetensors import safe_open
    from simdist_core.training.pretrain import EXIT_STOPPED

    out = tmp_path / "ckpt"
    argv = _argv(go2_data, out, 100_000)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "simdist_core.training.pretrain", *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    train_csv = tmp_path / "ckpt.run" / "train.csv"
    while not (train_csv.is_file() and len(train_csv.read_text().splitlines()) >= 3):  # 10 updates logged
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    output = proc.communicate(timeout=120)[0]
    assert proc.returncode == EXIT_STOPPED, output
    assert "run the same command to resume" in output
    assert not out.exists(), "a stopped run writes no checkpoint"
    meta = json.loads((tmp_path / "ckpt.run" / "optimizer.json").read_text())["extra"]
    stopped_at = meta["step"]
    assert stopped_at >= 10 and meta["sampler"]["bit_generator"] == "PCG64"
    with safe_open(str(tmp_path / "ckpt.run" / "model.safetensors"), framework="pt") as f:
        assert f.metadata()["step"] == str(stopped_at)
    # The same command with a reachable total finishes from there and writes the checkpoint.
    assert main(_argv(go2_data, out, stopped_at + 3)) == 0
    _, manifest = load_checkpoint(out)
    prov = manifest.extra["provenance"]
    assert prov["steps"] == stopped_at + 3 and prov["train_seconds"] >= meta["train_seconds"]


def test_sampler_state_of_another_generator_is_refused(go2_data):
    from simdist_core.data.sampler import WindowSampler
    from simdist_core.robots import get_robot

    sampler = WindowSampler(go2_data, get_robot("go2"), batch_size=4, seed=1)
    state = sampler.rng_state()
    first = sampler.sample()["actions"]
    sampler.set_rng_state(state)
    assert torch.equal(sampler.sample()["actions"], first)
    with pytest.raises(ValueError, match="PCG64"):
        sampler.set_rng_state({"bit_generator": "MT19937", "state": {}})


@pytest.mark.timeout(300)
def test_a_torn_resume_state_is_logged_and_resumes_at_the_optimizers_step(go2_data, tmp_path, caplog):
    # A run killed between writing the weights and the optimizer leaves weights one save period ahead.
    from safetensors.torch import load_file, save_file

    torch.set_num_threads(1)
    run = _runner(go2_data, tmp_path / "torn", 8)
    run.learn(progress=False)
    model_file = tmp_path / "torn.run" / "model.safetensors"
    save_file(load_file(str(model_file)), str(model_file), metadata={"step": "12"})
    resumed = _runner(go2_data, tmp_path / "torn", 16)
    with caplog.at_level("WARNING", logger="simdist_core.training.pretrain"):
        assert resumed.try_resume()
    assert resumed.trainer.step == 8
    assert "resume state torn: weights at step 12, optimizer at step 8" in caplog.text
