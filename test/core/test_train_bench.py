"""``simdist bench train``: both page-size variants run in their own processes on the same model and batches."""

import json
import math

import pytest
import torch
from _train_testlib import TINY_OVERRIDES, collect
from simdist_core.training.bench import main

from simdist_core import cli

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def go2_data(tmp_path_factory):
    torch.set_num_threads(1)
    return collect(tmp_path_factory.mktemp("bench_train_data"), "go2/flat", episodes=4, seed=5)


def test_each_variant_runs_in_a_child_with_its_setting_and_trains_the_same_numbers(go2_data, tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["--data", str(go2_data.path), "--robot", "go2", "--batch", "8", "--updates", "2", "--rounds", "1",
            "--threads", "1", "--json", str(out), *[a for o in TINY_OVERRIDES for a in ("--set", o)]]
    assert main(argv) == 0
    record = json.loads(out.read_text())
    assert set(record["modes"]) == {"pretrain", "finetune"}
    for mode in record["modes"].values():
        runs = mode["runs"]
        assert [r["thp_mem_alloc_enable"] for r in runs["4k_pages"]] == ["0"]
        assert [r["thp_mem_alloc_enable"] for r in runs["2m_pages"]] == ["1"]
        assert all(len(r["update_s"]) == 2 and math.isfinite(r["last_loss"]) for v in runs.values() for r in v)
        # the page size changes where memory comes from, not the arithmetic
        assert mode["same_loss_in_every_run"] and runs["4k_pages"][0]["last_loss"] == runs["2m_pages"][0]["last_loss"]
        assert mode["variants"]["4k_pages"]["speedup_vs_4k_pages"] == 1.0
    pretrain, finetune = (record["modes"][m]["runs"]["4k_pages"][0]["last_loss"] for m in ("pretrain", "finetune"))
    assert pretrain != finetune, "finetune mode trains the latent consistency alone"
    printed = capsys.readouterr().out
    assert "2m_pages" in printed and "same loss in every run: True" in printed
    assert main([*argv[:4], "--mode", "pretrain,bogus"]) == 2


def test_simdist_turns_2mb_pages_on_unless_the_environment_says_otherwise(monkeypatch, capsys):
    monkeypatch.delenv("THP_MEM_ALLOC_ENABLE", raising=False)
    assert cli.main(["config", "show", "go2/foam"]) == 0
    assert cli.os.environ["THP_MEM_ALLOC_ENABLE"] == "1"
    monkeypatch.setenv("THP_MEM_ALLOC_ENABLE", "0")
    assert cli.main(["config", "show", "go2/foam"]) == 0
    assert cli.os.environ["THP_MEM_ALLOC_ENABLE"] == "0", "an explicit setting is kept"
    capsys.readouterr()
