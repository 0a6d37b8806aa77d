"""Pretraining runner: schedule, optimizer-state round trip, resume from the saved step."""

import json
import math

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
