"""Adaptation benchmark on a tiny budget: real shifted task, real planner, real finetuning; checks the report."""

import copy
import json

import pytest
import torch
from _train_testlib import tiny_model
from simdist_core.checkpoint import load_checkpoint, save_checkpoint
from simdist_core.eval.adaptation import AdaptationConfig
from simdist_core.eval.adaptation_cli import main

pytestmark = pytest.mark.timeout(900)

SMALL_PLANNER = ["horizon=8", "num_samples=8", "num_pi_samples=4", "iterations=1", "num_elites=4"]


def test_seeds_draw_their_episodes_from_disjoint_ranges():
    from simdist_core.eval.adaptation import EPISODES_PER_STREAM, EVAL_STREAM, HELDOUT_STREAM, MAX_SEEDS, episode_seed

    streams = (EVAL_STREAM, HELDOUT_STREAM, *range(1, 12))  # evaluation, held-out set, collection rounds
    ranges = [range(episode_seed(st, seed), episode_seed(st, seed) + EPISODES_PER_STREAM)
              for st in streams for seed in (0, 1, 2, MAX_SEEDS - 1)]
    starts = sorted(r.start for r in ranges)
    assert all(b - a >= EPISODES_PER_STREAM for a, b in zip(starts[:-1], starts[1:], strict=True)), "overlap"
    assert max(r.stop for r in ranges) < 2**31, "environment seeds stay plain 32-bit ints"
    with pytest.raises(ValueError, match="seed"):
        AdaptationConfig(seed=MAX_SEEDS)


def test_config_validates_minutes():
    with pytest.raises(ValueError, match="minutes"):
        AdaptationConfig(minutes=(1.0, 2.0))
    with pytest.raises(ValueError, match="minutes"):
        AdaptationConfig(minutes=(0.0, 2.0, 1.0))


def test_benchmark_cli_reports_all_methods(tmp_path):
    torch.set_num_threads(1)
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    out, png = tmp_path / "adapt.json", tmp_path / "adapt.png"
    # 0.04 min = 120 control steps of experience per method; tiny evaluation and finetuning budgets
    argv = ["--task", "go2/ptfe_slope", "--checkpoint", str(ckpt), "--minutes", "0,0.04", "--json", str(out),
            "--plot", str(png), "--set", "eval_episodes=2", "--set", "eval_s=0.3", "--set", "heldout_episodes=2",
            "--set", "episode_s=1", "--set", "heldout_windows=64", "--set", "finetune.steps=15",
            "--set", "finetune.batch_size=16", "--set", "finetune.holdout_fraction=0.3",
            *[a for p in SMALL_PLANNER for a in ("--planner", p)]]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert report["task"] == "go2/ptfe_slope" and report["metric"] == "forward_progress_m"
    results = report["results"]
    assert set(results) == {"zero_shot", "dynamics_only", "full_finetune"}
    zero = results["zero_shot"]
    for method in ("dynamics_only", "full_finetune"):
        res = results[method]
        assert res["minutes"] == [0.0, 0.04]
        assert len(res["metric"]) == len(res["latent_error"]) == 2
        # minute 0 is the pretrained model, i.e. the zero-shot measurement
        assert res["metric"][0] == zero["metric"][0] and res["latent_error"][0] == zero["latent_error"][0]
        assert res["latent_error"][1] > 0 and isinstance(res["gate"][1]["passed"], bool)
        assert res["probe_error"][0] == zero["probe_error"][0] and res["probe_error"][1] > 0
        assert report["summary"][method]["probe_error_ratio_zero_shot_over_method"] > 0
        assert res["reward_error"][0] == zero["reward_error"][0] and res["reward_error"][1] > 0
        assert res["reward_error_task"][0] == zero["reward_error_task"][0] and res["reward_error_task"][1] > 0
        assert res["reward_per_step"][0] == zero["reward_per_step"][0]
        assert all(isinstance(v, float) and v == v for v in res["reward_per_step"])
        assert "reward_per_step_minus_zero_shot" in report["summary"][method]
        # per-episode values of every point, and an interval around their mean
        for i in range(2):
            values = res["episode_metric"][i]
            assert len(values) == 2 and sum(values) / 2 == pytest.approx(res["metric"][i])
            low, high = res["metric_ci95"][i]
            assert low <= res["metric"][i] <= high
            assert len(res["episode_fell"][i]) == 2 and all(f in (0.0, 1.0) for f in res["episode_fell"][i])
            assert res["falls_per_min"][i] == pytest.approx(
                sum(res["episode_fell"][i]) / (sum(res["episode_duration_s"][i]) / 60))
        rows = report["summary"][method]["by_minute"]
        assert [r["minutes"] for r in rows] == [0.0, 0.04] and rows[0]["metric_minus_zero_shot"] == 0.0
        assert report["summary"][method]["metric_minus_zero_shot_ci95"] == rows[-1]["metric_minus_zero_shot_ci95"]
        # the final model: a normal checkpoint that says what it is
        final = load_checkpoint(report["final_checkpoints"][method])[1]
        assert res["final_checkpoint"] == report["final_checkpoints"][method] == str(tmp_path / "adapt_work" / method
                                                                                     / "final")
        assert final.version == 2 and final.parent_version == 1
        assert final.extra["task"] == "go2/ptfe_slope" and final.extra["seed"] == 0
        assert final.extra["parent_checkpoint"] == str(ckpt) and final.extra["method"] == method
        passed = [g["passed"] for g in res["gate"][1:]]
        assert final.extra["accepted_rounds"] == sum(passed)
        assert final.extra["minutes_of_experience"] == (0.04 if passed[-1] else 0.0)
    assert "metric_ratio_vs_full_finetune" in report["summary"]["dynamics_only"]["by_minute"][-1]
    assert png.stat().st_size > 1000
    assert main(argv) == 2, "a non-empty workdir is refused (experience from two runs must not mix)"


def test_rl_baselines_and_a_compared_checkpoint_run_on_the_same_budget(tmp_path, capsys):
    from simdist_core.data import generate

    torch.set_num_threads(1)
    ckpt, other, data = tmp_path / "ckpt", tmp_path / "other", tmp_path / "data"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    save_checkpoint(other, tiny_model("go2", seed=1), version=1)
    assert generate.main(["--robot", "go2", "--task", "flat", "--steps", "300", "--seed", "2", "--out", str(data),
                          "--set", "episode_length_s=1", "--set", "data.value.episodes=2",
                          "--set", "data.value.train_steps=50", "--set", "data.value.branch_states=2",
                          "--set", "data.value.branch_steps=10", "--no-fsync"]) == 0
    out = tmp_path / "adapt.json"
    argv = ["--task", "go2/foam", "--checkpoint", str(ckpt), "--minutes", "0,0.02", "--json", str(out),
            "--methods", "zero_shot,dynamics_only,rlpd,iql", "--compare", f"other={other}",
            "--set", "eval_episodes=1", "--set", "eval_s=0.3", "--set", "heldout_episodes=2", "--set", "episode_s=1",
            "--set", "heldout_windows=32", "--set", "finetune.steps=5", "--set", "finetune.batch_size=16",
            "--set", "finetune.holdout_fraction=0.3",
            *[a for p in SMALL_PLANNER for a in ("--planner", p)],
            *[a for m in ("rlpd", "iql") for kv in ("offline_steps=2", "batch_size=16", "hidden=32", "update_every=10",
                                                  "history=2") for a in ("--set", f"{m}.{kv}")],
            "--set", "rlpd.utd_ratio=2", "--set", "rlpd.num_critics=4", "--set", "finetune.replay_fraction=0.5"]
    assert main([*argv, "--workdir", str(tmp_path / "w0")]) == 2, "rlpd without --data and no recorded dataset"
    assert "--data" in capsys.readouterr().err
    replay_only = [a for a in argv if a != "zero_shot,dynamics_only,rlpd,iql"]
    replay_only[replay_only.index("--methods") + 1:replay_only.index("--methods") + 1] = ["dynamics_only"]
    assert main([*replay_only, "--workdir", str(tmp_path / "w1")]) == 2, "replay without --data"
    assert "replay_fraction" in capsys.readouterr().err
    assert main([*argv, "--data", str(data)]) == 0
    report = json.loads(out.read_text())
    results = report["results"]
    assert set(results) == {"zero_shot", "dynamics_only", "rlpd", "iql", "zero_shot@other", "dynamics_only@other"}
    for method in ("rlpd", "iql"):
        res = results[method]
        assert res["minutes"] == [0.0, 0.02] and all(m == m for m in res["metric"])  # finite, not NaN
        assert res["latent_error"] == [None, None] and res["probe_error"] == [None, None]
        assert res["reward_error_task"] == [None, None]
        assert res["update_rounds"] == [2, 2 + 60 // 10]  # 0.02 min at 50 Hz = 60 steps, a round every 10
        assert report["summary"][method]["latent_error_ratio_zero_shot_over_method"] is None
    # the compared checkpoint starts from its own zero-shot point, not the main one's
    assert results["dynamics_only@other"]["latent_error"][0] == results["zero_shot@other"]["latent_error"][0]
    assert results["zero_shot@other"]["latent_error"][0] != results["zero_shot"]["latent_error"][0]
    assert report["rl_dataset"] == str(data) and report["compare"] == {"other": str(other)}
    # the world-model methods finetuned on batches half replayed from the same (simulation) dataset
    assert report["replay_dataset"] == str(data) and report["config"]["finetune"]["replay_fraction"] == 0.5


def test_point_records_true_reward_per_control_step():
    from simdist_core.eval.adaptation import point_fields

    # 2 episodes with returns 30 and 10 over 40 and 20 steps: mean return 20, 60 steps -> 40 / 60 per step
    report = {"episodes": 2, "forward_progress_m": 1.5, "latent_error": 0.1, "probe_error": 0.2, "reward_error": 0.3,
              "falls": 0.5, "summary": {"mean_return": 20.0, "steps": 60.0, "duration_s": 1.2}}
    fields = point_fields(report, "forward_progress_m")
    assert fields["metric"] == 1.5 and fields["falls"] == 0.5 and fields["mean_duration_s"] == 1.2
    assert fields["reward_per_step"] == pytest.approx(40.0 / 60.0)


def test_heldout_labels_belong_to_each_recorded_observation(tmp_path):
    """The evaluation set's probe row t is the state of observation t (not the post-step state), and
    its reward is the simulator's reward of transition t."""
    import numpy as np
    from simdist_core.data.dataset import Dataset
    from simdist_core.eval.experience import collect_experience
    from simdist_core.sim.base import make_env

    env = make_env("go2/flat")
    probes, rewards = [], []

    class RecordingPlanner:  # logs the probe of the state each action is planned in
        def reset(self):
            pass

        def plan(self, model_input):
            probes.append(env.privileged_state()["probe"].copy())
            return np.full(12, 0.3 * (len(probes) % 3 - 1), np.float32)

    step = env.step

    def logged_step(action):
        result = step(action)
        rewards.append(result.reward)
        return result

    env.step = logged_step
    collect_experience(env, RecordingPlanner(), tmp_path / "shard-0", episodes=2, max_steps=20, seed=0,
                       eval_labels=True)
    ds = Dataset(tmp_path)
    stored = ds.gather("priv/probe", np.arange(len(ds)))
    episode = ds.gather("episode_id", np.arange(len(ds)))
    first = stored[episode == episode[0]][:-1]  # the last row is the final observation (no action)
    np.testing.assert_allclose(first, np.array(probes[: len(first)]), rtol=0, atol=0)
    stored_rewards = ds.gather("reward", np.arange(len(ds)))[episode == episode[0]]
    np.testing.assert_allclose(stored_rewards[:-1], np.float32(rewards[: len(first)]), rtol=0, atol=0)
    assert stored_rewards[-1] == 0.0  # the final-observation row, as simdist generate stores it
    assert np.ptp(stored[:, 0]) > 0  # the state really changes between rows


def test_reward_error_in_task_units_is_the_heads_error_whatever_its_normaliser(tmp_path):
    """``reward_error_task`` is the MSE of the reward head in task units along predicted latents: it does not move
    when a head's normaliser is rescaled with its output (same task-unit predictions), while the training loss
    (``reward_error``, normalised units) does; with a constant head it equals the spread of the true rewards."""
    from _train_testlib import collect
    from simdist_core.eval.adaptation import REWARD_ONLY, heldout_batches, reward_rollout_error
    from simdist_core.training.trainer import evaluate_loss

    torch.set_num_threads(1)
    model = tiny_model("go2")
    collect(tmp_path / "d", task="go2/foam", model=model, episodes=2, max_steps=30, record_reward=True)
    batches = heldout_batches(tmp_path / "d", model.spec, 16, 0)
    head = model.reward_head
    with torch.no_grad():
        head.target_mean.fill_(0.5)
        head.target_std.fill_(2.0)
    task_error, loss = reward_rollout_error(model, batches), evaluate_loss(model, batches, REWARD_ONLY)["reward"]
    with torch.no_grad():  # 4x the normaliser's spread, a quarter of the output: the same task-unit predictions
        head.target_std.mul_(4.0)
        head.out[-1].weight.div_(4.0)
        head.out[-1].bias.div_(4.0)
    assert reward_rollout_error(model, batches) == pytest.approx(task_error, rel=1e-5)
    assert evaluate_loss(model, batches, REWARD_ONLY)["reward"] != pytest.approx(loss, rel=1e-2)
    with torch.no_grad():  # a head that always predicts its mean, 0.5 reward units
        head.out[-1].weight.zero_()
        head.out[-1].bias.zero_()
    rewards = torch.cat([b["rewards"][b["valid"].bool()] for b in batches])
    assert rewards.std() > 0  # real, varying rewards
    assert reward_rollout_error(model, batches) == pytest.approx(float((rewards - 0.5).pow(2).mean()), rel=1e-5)


TINY_RUN = ["--task", "go2/foam", "--minutes", "0,0.02", "--methods", "dynamics_only", "--set", "eval_episodes=2",
            "--set", "eval_s=0.3", "--set", "heldout_episodes=2", "--set", "episode_s=1", "--set", "heldout_windows=32",
            "--set", "finetune.steps=5", "--set", "finetune.batch_size=16", "--set", "finetune.holdout_fraction=0.3",
            *[a for p in SMALL_PLANNER for a in ("--planner", p)]]


def _numbers(report):
    """A report without what differs between identical runs (wall times) or depends on where it ran (paths)."""
    drop = {"wall_s", "collect_wall_s", "finetune_wall_s", "final_checkpoint", "final_checkpoints", "merged_from",
            "wall_s_per_seed", "final_checkpoint_per_seed", "collect_wall_s_per_seed", "finetune_wall_s_per_seed",
            "final_checkpoints_per_seed"}
    if isinstance(report, dict):
        return {k: _numbers(v) for k, v in report.items() if k not in drop}
    if isinstance(report, list):
        return [_numbers(v) for v in report]
    return report


def test_rounds_between_evaluations_collect_and_finetune_without_measuring(tmp_path, monkeypatch):
    """``eval_at``: a round at every mark of ``minutes`` (the live finetuner's schedule), an evaluation only at
    the marks named; each round still collects on its own episodes (those it would without ``eval_at``)."""
    from simdist_core.data.dataset import Dataset
    from simdist_core.eval.adaptation import Benchmark, episode_seed

    torch.set_num_threads(1)
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    seeds, measured, collect = [], [], Benchmark._collect
    measure = Benchmark.measure

    def spy_collect(self, model, shard, steps, seed, first_episode, **kwargs):
        if shard.parent.name != "heldout":
            seeds.append(seed)
        return collect(self, model, shard, steps, seed, first_episode, **kwargs)

    def spy_measure(self, model, data_steps=None):
        measured.append(model)
        return measure(self, model, data_steps)

    monkeypatch.setattr(Benchmark, "_collect", spy_collect)
    monkeypatch.setattr(Benchmark, "measure", spy_measure)
    run = [a if a != "0,0.02" else "0,0.02,0.04,0.06" for a in TINY_RUN]
    out = tmp_path / "r.json"
    assert main([*run, "--checkpoint", str(ckpt), "--set", "eval_at=0.06", "--json", str(out)]) == 0
    res = json.loads(out.read_text())["results"]["dynamics_only"]
    assert res["minutes"] == [0.0, 0.06] and len(res["metric"]) == len(res["episode_metric"]) == 2
    assert [r["minutes"] for r in res["rounds"]] == [0.02, 0.04, 0.06]
    assert seeds == [episode_seed(k, 0) for k in (2, 3, 4)], "round k collects on stream k + 1, measured or not"
    assert len(measured) == 2, "zero-shot and the last mark only"
    assert res["accepted_rounds"] == sum(r["gate"]["passed"] for r in res["rounds"])
    assert res["gate"][1] == res["rounds"][-1]["gate"]
    data = Dataset(tmp_path / "r_work" / "dynamics_only")  # a row per control step + each episode's last observation
    assert data.n_steps - data.num_episodes == 3 * 60, "every round's 0.02 min at 50 Hz is kept"
    with pytest.raises(ValueError, match="eval_at"):
        AdaptationConfig(minutes=(0.0, 1.0, 2.0), eval_at=(1.0,))  # the last mark must be measured
    with pytest.raises(ValueError, match="eval_at"):
        AdaptationConfig(minutes=(0.0, 1.0, 2.0), eval_at=(1.5, 2.0))


def test_models_finetuned_on_enough_experience_plan_with_the_adapted_tie_as_the_planner_node_does(
    tmp_path, monkeypatch
):
    """``adapted_tie``: once a model has passed the gate after finetuning on ``after_data_steps`` control steps, it
    collects and is evaluated at the adapted ``prior_weight``; the pretrained model, and a model still short of the
    count, plan at ``--planner``'s. The final checkpoint says so as the finetuner node's do (``data_steps``)."""
    import dataclasses

    from simdist_core.eval import adaptation
    from simdist_core.eval.adaptation import Benchmark
    from simdist_core.planning.adapted_tie import AdaptedTie, finetuned_data_steps
    from simdist_core.training.adapt import FinetuneConfig

    torch.set_num_threads(1)
    verdicts = iter([False, True, False])  # the gate's verdict on rounds 1, 2, 3
    real_finetune, real_planner, real_evaluate = adaptation.finetune_dynamics, adaptation.make_planner, \
        adaptation.evaluate
    ties: list[tuple[str, str | None]] = []

    def scripted_gate(model, data, cfg, **kwargs):
        new, report = real_finetune(model, data, cfg, **kwargs)
        report.gate = dataclasses.replace(report.gate, passed=next(verdicts))
        return new, report

    def spy_planner(model, manifest, preset, overrides, seed):
        ties.append(("plan", overrides.get("prior_weight")))
        return real_planner(model, manifest, preset, overrides, seed)

    def spy_evaluate(model, cfg, **kwargs):
        ties.append(("evaluate", kwargs["planner_overrides"].get("prior_weight")))
        return real_evaluate(model, cfg, **kwargs)

    monkeypatch.setattr(adaptation, "finetune_dynamics", scripted_gate)
    monkeypatch.setattr(adaptation, "make_planner", spy_planner)
    monkeypatch.setattr(adaptation, "evaluate", spy_evaluate)
    overrides = {**dict(p.split("=") for p in SMALL_PLANNER), "prior_weight": "7.0"}
    steps_per_round = 60  # 0.02 simulated minutes at 50 Hz
    cfg = AdaptationConfig(task="go2/foam", minutes=(0.0, 0.02, 0.04, 0.06), eval_at=(0.06,), eval_episodes=1,
                           eval_s=0.3, heldout_episodes=2, episode_s=1.0, heldout_windows=32,
                           adapted_tie=AdaptedTie(prior_weight=123.0, after_data_steps=2 * steps_per_round),
                           finetune=FinetuneConfig(steps=3, batch_size=16, holdout_fraction=0.3))  # fmt: skip
    bench = Benchmark(tiny_model("go2"), cfg, tmp_path / "work", planner_overrides=overrides)
    report = bench.run(("dynamics_only",))
    # held-out set, zero-shot, round 1 and round 2 (round 1 rejected: still pretrained) at the deployed tie; round 3
    # by the model accepted after round 2 (finetuned on 120 steps), and its evaluation, at the adapted one; last,
    # the report's own record of the pretrained model's planner
    assert [t for _, t in ties] == ["7.0", "7.0", "7.0", "7.0", "123.0", "123.0", "7.0"], ties
    assert [kind for kind, _ in ties] == ["plan", "evaluate", "plan", "plan", "plan", "evaluate", "plan"]
    assert report["results"]["dynamics_only"]["accepted_rounds"] == 1
    assert report["config"]["adapted_tie"] == {"prior_weight": 123.0, "after_data_steps": 120}
    _, manifest = load_checkpoint(report["final_checkpoints"]["dynamics_only"])
    assert finetuned_data_steps(manifest) == 2 * steps_per_round and manifest.planner_config["prior_weight"] == 123.0
    assert bench.planner_overrides_for(2 * steps_per_round - 1)["prior_weight"] == "7.0", "short of the count"
    assert bench.planner_overrides_for(None) == overrides
    off = Benchmark(tiny_model("go2"), AdaptationConfig(task="go2/foam"), tmp_path / "off", planner_overrides=overrides)
    assert off.planner_overrides_for(10**9) == overrides, "negative prior_weight (the default): never loosened"


def test_seeds_run_in_one_process_equal_separate_runs_merged(tmp_path):
    """``--seeds 0,1`` = two runs with ``--set seed=S`` merged with ``--merge`` (the way to run them in parallel)."""
    torch.set_num_threads(1)
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    run = [*TINY_RUN, "--checkpoint", str(ckpt)]
    assert main([*run, "--seeds", "0,1", "--json", str(tmp_path / "seeds.json")]) == 0
    merged = json.loads((tmp_path / "seeds.json").read_text())
    assert merged["seeds"] == [0, 1] and "seed" not in merged["config"]
    work = tmp_path / "seeds_work"
    assert merged["merged_from"] == [str(work / "seed-0" / "report.json"), str(work / "seed-1" / "report.json")]
    assert merged["final_checkpoints_per_seed"][1]["dynamics_only"] == str(work / "seed-1" / "dynamics_only" / "final")
    assert main([*run, "--set", "seed=1", "--json", str(tmp_path / "s1.json")]) == 0
    alone = json.loads((tmp_path / "s1.json").read_text())
    assert _numbers(alone) == _numbers(json.loads((work / "seed-1" / "report.json").read_text())), \
        "seed 1 after seed 0 in one process gives what seed 1 gives alone"
    assert main(["--merge", str(work / "seed-0" / "report.json"), str(tmp_path / "s1.json"), "--json",
                 str(tmp_path / "merged.json"), "--plot", str(tmp_path / "merged.png")]) == 0
    assert _numbers(json.loads((tmp_path / "merged.json").read_text())) == _numbers(merged)
    assert (tmp_path / "merged.png").stat().st_size > 1000
    res = merged["results"]["dynamics_only"]
    for i in range(2):  # pooled over both seeds' episodes
        pooled = [v for seed in res["episode_metric_per_seed"][i] for v in seed]
        assert len(pooled) == 4 and res["metric"][i] == pytest.approx(sum(pooled) / 4)
        assert res["metric_ci95"][i][0] <= res["metric"][i] <= res["metric_ci95"][i][1]
    assert res["metric_per_seed"][1][1] == alone["results"]["dynamics_only"]["metric"][1]


def test_final_checkpoint_is_the_in_memory_model_and_measures_the_same(tmp_path):
    from simdist_core.eval.adaptation import Benchmark
    from simdist_core.planning.mppi import planner_preset
    from simdist_core.training.adapt import FinetuneConfig

    torch.set_num_threads(1)
    cfg = AdaptationConfig(task="go2/foam", minutes=(0.0, 0.02), eval_episodes=1, eval_s=0.3, heldout_episodes=2,
                           episode_s=1.0, heldout_windows=32,
                           finetune=FinetuneConfig(steps=5, batch_size=16, holdout_fraction=0.3))
    overrides = dict(p.split("=") for p in SMALL_PLANNER)
    pretrained = tiny_model("go2")
    as_loaded = copy.deepcopy(pretrained).eval().requires_grad_(False)  # as `simdist eval` and the nodes load it
    bench = Benchmark(pretrained, cfg, tmp_path / "work", planner_overrides=overrides)
    report = bench.run(("dynamics_only",))
    # The zero-shot point is the pretrained checkpoint as `simdist eval` runs it, to the last bit.
    assert bench.measure(as_loaded)["forward_progress_m"] == report["results"]["dynamics_only"]["metric"][0]
    loaded, manifest = load_checkpoint(report["final_checkpoints"]["dynamics_only"])
    in_memory = bench.final_models["dynamics_only"]
    for key, value in in_memory.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key
    assert manifest.parent_version is None and manifest.extra["parent_checkpoint"] is None  # no checkpoint given
    assert set(manifest.parts_changed) <= {"dynamics"}, "dynamics-only finetuning changes only the dynamics"
    assert manifest.planner_config["num_samples"] == 8 and manifest.planner_config["horizon"] == 8
    assert planner_preset("cpu").num_samples != 8
    res = report["results"]["dynamics_only"]
    # as `simdist eval` loads a checkpoint (the finetuned model has requires_grad off too; measured with it on, the
    # progress differed in the 8th digit: another float path in torch)
    again = bench.measure(loaded.requires_grad_(False))
    assert again["latent_error"] == res["latent_error"][-1] and again["forward_progress_m"] == res["metric"][-1]


def test_dynamics_reward_method_trains_on_recorded_rewards_and_dynamics_only_never_sees_them(tmp_path):
    from simdist_core.data.dataset import Dataset
    from simdist_core.eval.adaptation import Benchmark
    from simdist_core.training.adapt import FinetuneConfig

    torch.set_num_threads(1)
    cfg = AdaptationConfig(task="go2/ptfe_slope", minutes=(0.0, 0.04), eval_episodes=1, eval_s=0.3,
                           heldout_episodes=2, episode_s=1.0, heldout_windows=32,
                           finetune=FinetuneConfig(steps=15, batch_size=16, holdout_fraction=0.3))
    bench = Benchmark(tiny_model("go2"), cfg, tmp_path / "work", planner_overrides=dict(p.split("=") for p in
                                                                                         SMALL_PLANNER))
    report = bench.run(("dynamics_only", "dynamics_reward", "dynamics_reward_encoded"))
    fields = {m: set(Dataset(tmp_path / "work" / m).fields) for m in report["results"] if m != "zero_shot"}
    assert "reward" in fields["dynamics_reward"] and "reward" not in fields["dynamics_only"], fields
    assert "reward" in fields["dynamics_reward_encoded"], fields
    gate = report["results"]["dynamics_reward"]["gate"][1]
    assert "latent + reward" in gate["reason"], gate  # the gate scored the loss the method trained
    assert "latent + reward" not in report["results"]["dynamics_only"]["gate"][1]["reason"]
    changed = set(load_checkpoint(report["final_checkpoints"]["dynamics_reward"])[1].parts_changed)
    assert changed == ({"dynamics", "reward"} if gate["passed"] else set()), changed
    assert "metric_minus_dynamics_reward" in report["summary"]["dynamics_only"]["by_minute"][-1]


def _point(episodes, latent):
    """An ``evaluate`` report of Go2 episodes given as (progress_m, fell, duration_s), plus the latent yardsticks."""
    per_episode = [{"forward_progress_m": p, "fell": f, "duration_s": d} for p, f, d in episodes]
    return {"task": "go2/foam", "episodes": len(episodes), "forward_progress_m": sum(p for p, _, _ in episodes) /
            len(episodes), "latent_error": latent, "probe_error": 1.0, "reward_error": 1.0, "falls": 0.0,
            "summary": {"mean_return": 1.0, "steps": 10.0, "duration_s": 1.0}, "per_episode": per_episode}


def _report(seed, zero_episodes, zero_latent, after_episodes, after_latent, **config):
    """A one-seed report of zero-shot and dynamics_only at minutes 0 and 1, built as ``Benchmark.run`` builds it."""
    from simdist_core.config import to_dict
    from simdist_core.eval.adaptation import point_fields
    from simdist_core.eval.adaptation_report import summarise

    zero = point_fields(_point(zero_episodes, zero_latent), "forward_progress_m")
    after = point_fields(_point(after_episodes, after_latent), "forward_progress_m")
    results = {"zero_shot": {"minutes": [0.0], **{k: [v] for k, v in zero.items()}},
               "dynamics_only": {"minutes": [0.0, 1.0], **{k: [zero[k], after[k]] for k in zero},
                                 "gate": [None, {"passed": True}], "final_checkpoint": f"w{seed}/dynamics_only/final"}}
    return {"task": "go2/foam", "metric": "forward_progress_m", "results": results, "summary": summarise(results),
            "config": to_dict(AdaptationConfig(task="go2/foam", minutes=(0.0, 1.0), seed=seed, **config)),
            "planner": {"num_samples": 8}, "env_overrides": {}, "checkpoint": "ckpt", "compare": {}, "wall_s": 10.0}


def test_merge_pools_the_episodes_of_all_seeds(tmp_path, capsys):
    from simdist_core.eval.adaptation_report import merge_reports

    # seed 0: zero-shot 1 m and 3 m (the first fell after 30 s), 2 and 4 m after a minute; seed 1: 2, 2 -> 6, 8
    a = _report(0, [(1.0, 1.0, 30.0), (3.0, 0.0, 60.0)], 0.4, [(2.0, 0.0, 60.0), (4.0, 0.0, 60.0)], 0.1)
    b = _report(1, [(2.0, 0.0, 60.0), (2.0, 0.0, 60.0)], 0.2, [(6.0, 0.0, 60.0), (8.0, 1.0, 30.0)], 0.3)
    merged = merge_reports([b, a], ["b.json", "a.json"])
    assert merged["seeds"] == [0, 1] and merged["merged_from"] == ["a.json", "b.json"], "ordered by seed"
    res = merged["results"]["dynamics_only"]
    assert res["metric"] == [2.0, 5.0]  # (1 + 3 + 2 + 2) / 4, (2 + 4 + 6 + 8) / 4
    assert res["metric_per_seed"] == [[2.0, 2.0], [3.0, 7.0]]
    assert res["episode_metric_per_seed"][1] == [[2.0, 4.0], [6.0, 8.0]]
    assert res["falls_per_min"] == [pytest.approx(1 / 3.5), pytest.approx(1 / 3.5)]  # 1 fall in 210 s each
    assert res["latent_error"] == [pytest.approx(0.3), pytest.approx(0.2)]
    assert res["latent_error_per_seed"] == [[0.4, 0.2], [0.1, 0.3]]
    assert res["final_checkpoint_per_seed"] == ["w0/dynamics_only/final", "w1/dynamics_only/final"]
    assert res["metric_ci95"][1][0] <= 5.0 <= res["metric_ci95"][1][1]
    summary = merged["summary"]["dynamics_only"]
    assert summary["metric_ratio_vs_zero_shot"] == pytest.approx(2.5)
    assert summary["latent_error_ratio_zero_shot_over_method"] == pytest.approx(1.5)
    last = summary["by_minute"][-1]
    assert last["metric_ratio_vs_zero_shot"] == pytest.approx(2.5) and last["metric_minus_zero_shot"] == 3.0
    low, high = last["metric_ratio_vs_zero_shot_ci95"]
    assert low <= 2.5 <= high and summary["metric_ratio_vs_zero_shot_ci95"] == [low, high]
    assert last["latent_error_ratio_per_seed"] == [pytest.approx(4.0), pytest.approx(2 / 3)]
    # through the CLI, with a plot
    paths = []
    for name, report in (("a", a), ("b", b)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(report))
    out, png = tmp_path / "merged.json", tmp_path / "merged.png"
    assert main(["--merge", *map(str, paths), "--json", str(out), "--plot", str(png)]) == 0
    assert json.loads(out.read_text())["results"]["dynamics_only"]["metric"] == [2.0, 5.0]
    assert png.stat().st_size > 1000 and "seeds 0, 1" in capsys.readouterr().out


def _as_full_finetune(report, episodes, latent):
    """The same seed's report had it run ``--methods full_finetune`` instead (same zero-shot)."""
    from simdist_core.eval.adaptation import point_fields
    from simdist_core.eval.adaptation_report import summarise

    out = json.loads(json.dumps(report))
    zero = out["results"]["zero_shot"]
    after = point_fields(_point(episodes, latent), "forward_progress_m")
    out["results"] = {"zero_shot": zero, "full_finetune": {
        "minutes": [0.0, 1.0], **{k: [zero[k][0], after[k]] for k in after},
        "gate": [None, {"passed": True}], "final_checkpoint": "w/full_finetune/final"}}
    out["summary"], out["final_checkpoints"] = summarise(out["results"]), {"full_finetune": "w/full_finetune/final"}
    return out


def test_merge_joins_methods_of_one_seed_run_in_separate_processes():
    from simdist_core.eval.adaptation import METHOD_CHOICES
    from simdist_core.eval.adaptation_report import merge_reports

    eps = [(1.0, 0.0, 60.0), (3.0, 0.0, 60.0)]
    a = _report(0, eps, 0.4, [(2.0, 0.0, 60.0), (4.0, 0.0, 60.0)], 0.1)
    b = _report(1, eps, 0.2, [(6.0, 0.0, 60.0), (8.0, 0.0, 60.0)], 0.3)
    a_full, b_full = (_as_full_finetune(r, [(1.0, 0.0, 60.0), (1.0, 0.0, 60.0)], 0.2) for r in (a, b))
    merged = merge_reports([a_full, b, a, b_full], ["af.json", "b.json", "a.json", "bf.json"], METHOD_CHOICES)
    assert merged["seeds"] == [0, 1] and list(merged["results"]) == ["zero_shot", "dynamics_only", "full_finetune"]
    assert merged["merged_from"] == ["af.json + a.json", "b.json + bf.json"]
    assert merged["results"]["dynamics_only"]["metric"] == [2.0, 5.0]
    assert merged["results"]["full_finetune"]["metric"] == [2.0, 1.0]
    last = merged["summary"]["dynamics_only"]["by_minute"][-1]
    assert last["metric_minus_full_finetune"] == pytest.approx(4.0)  # compared paired, as if run in one process
    # the same method twice for a seed, or a zero-shot that differs (not the same run): refused, naming why
    with pytest.raises(ValueError, match="seed 0 appears twice"):
        merge_reports([a, a, b], ["a.json", "a2.json", "b.json"])
    other = _as_full_finetune(a, [(1.0, 0.0, 60.0)] * 2, 0.2)
    other["results"]["zero_shot"]["metric"] = [9.0]
    with pytest.raises(ValueError, match="results.zero_shot"):
        merge_reports([other, a, b], ["o.json", "a.json", "b.json"])


def _as_rlpd(report, episodes):
    """The same seed's report had it run ``--methods rlpd`` with its own RLPD budget and dataset (same zero-shot)."""
    from simdist_core.eval.adaptation_report import summarise

    out = _as_full_finetune(report, episodes, 0.2)
    out["results"]["rlpd"] = out["results"].pop("full_finetune")
    out["summary"] = summarise(out["results"])
    out["config"]["rlpd"]["utd_ratio"], out["rl_dataset"] = 2, "data/pre150k"
    out["config"]["finetune"]["steps"] = 1  # what a baselines-only run records here is read by no method it ran
    return out


def _with_later_mark(report, metric):
    """The same seed's world-model report run one minute mark further (2.0), where it scored ``metric``."""
    from simdist_core.eval.adaptation_report import summarise

    out = json.loads(json.dumps(report))
    res = out["results"]["dynamics_only"]
    for key, values in res.items():
        if isinstance(values, list) and len(values) == 2:  # per-mark values: the new mark as the last one
            values.append({"minutes": 2.0, "metric": metric, "episode_metric": [metric, metric]}.get(key, values[-1]))
    out["config"]["minutes"] = [0.0, 1.0, 2.0]
    out["summary"] = summarise(out["results"])
    return out


def test_merge_joins_rl_baselines_run_later_with_their_own_settings():
    from simdist_core.eval.adaptation import METHOD_CHOICES
    from simdist_core.eval.adaptation_report import merge_reports

    eps = [(1.0, 0.0, 60.0), (3.0, 0.0, 60.0)]
    a = _report(0, eps, 0.4, [(2.0, 0.0, 60.0), (4.0, 0.0, 60.0)], 0.1)
    b = _report(1, eps, 0.2, [(6.0, 0.0, 60.0), (8.0, 0.0, 60.0)], 0.3)
    a_rl, b_rl = (_as_rlpd(r, [(0.5, 1.0, 30.0), (0.5, 1.0, 30.0)]) for r in (a, b))
    merged = merge_reports([a, b, a_rl, b_rl], ["a.json", "b.json", "ar.json", "br.json"], METHOD_CHOICES)
    assert list(merged["results"]) == ["zero_shot", "dynamics_only", "rlpd"]
    # each method's settings come from the report that ran it
    assert merged["config"]["rlpd"]["utd_ratio"] == 2 and merged["rl_dataset"] == "data/pre150k"
    assert merged["config"]["finetune"]["steps"] == a["config"]["finetune"]["steps"] != 1
    last = merged["summary"]["dynamics_only"]["by_minute"][-1]
    assert last["metric_minus_rlpd"] == pytest.approx(4.5)  # paired on the same episodes: 5.0 - 0.5
    # the baselines may stop at an earlier minute mark: compared where both have one
    a_long, b_long = (_with_later_mark(r, 3.0) for r in (a, b))
    merged = merge_reports([a_long, b_long, a_rl, b_rl], ["a.json", "b.json", "ar.json", "br.json"], METHOD_CHOICES)
    assert merged["config"]["minutes"] == [0.0, 1.0, 2.0]
    assert merged["results"]["dynamics_only"]["minutes"] == [0.0, 1.0, 2.0]
    assert merged["results"]["rlpd"]["minutes"] == [0.0, 1.0]
    rows = merged["summary"]["dynamics_only"]["by_minute"]
    assert rows[1]["metric_minus_rlpd"] == pytest.approx(4.5) and "metric_minus_rlpd" not in rows[2]
    # a setting both reports' methods read must still agree: an RL run with other episode lengths is refused
    other = _as_rlpd(a, [(0.5, 1.0, 30.0)] * 2)
    other["config"]["eval_s"] = 5.0
    with pytest.raises(ValueError, match="config.eval_s"):
        merge_reports([a, other, b, b_rl], ["a.json", "o.json", "b.json", "br.json"])
    # and two world-model reports of one seed must agree on the finetuning settings
    full = _as_full_finetune(a, [(1.0, 0.0, 60.0)] * 2, 0.2)
    full["config"]["finetune"]["steps"] = 1
    with pytest.raises(ValueError, match="config.finetune.steps"):
        merge_reports([a, full, b], ["a.json", "f.json", "b.json"])


def test_merge_takes_a_config_key_a_report_predates_as_its_default(tmp_path, capsys):
    eps = [(1.0, 0.0, 60.0), (3.0, 0.0, 60.0)]
    a = _report(0, eps, 0.4, [(2.0, 0.0, 60.0), (4.0, 0.0, 60.0)], 0.1)
    b = _report(1, eps, 0.2, [(6.0, 0.0, 60.0), (8.0, 0.0, 60.0)], 0.3)
    del b["config"]["finetune"]["reward_weight"]  # written before FinetuneConfig had the field
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, report in zip(paths, (a, b), strict=True):
        path.write_text(json.dumps(report))
    out = tmp_path / "merged.json"
    assert main(["--merge", *map(str, paths), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["config"]["finetune"]["reward_weight"] == 0.0
    a["config"]["finetune"]["reward_weight"] = 0.5  # not the default: a different run, refused
    paths[0].write_text(json.dumps(a))
    assert main(["--merge", *map(str, paths), "--json", str(tmp_path / "m2.json")]) == 2
    assert "finetune.reward_weight" in capsys.readouterr().err


@pytest.mark.parametrize(("change", "message"), [
    ({"seed_b": 0}, "seed 0 appears twice"),
    ({"eval_s": 5.0}, "config.eval_s"),
    ({"checkpoint": "other"}, "checkpoint: "),
    ({"seed_scheme": 2}, "seed_scheme: "),
    ({"drop_episodes": True}, "no per-episode values"),
    ({"extra_args": ["--minutes", "0,1"]}, "drop --minutes"),
    ({"one": True}, "at least 2 reports"),
])
def test_merge_refuses_reports_that_differ_in_more_than_seed(tmp_path, capsys, change, message):
    eps = [(1.0, 0.0, 10.0), (2.0, 0.0, 10.0)]
    a = _report(0, eps, 0.1, eps, 0.1)
    b = _report(change.get("seed_b", 1), eps, 0.1, eps, 0.1, **({"eval_s": change["eval_s"]} if "eval_s" in change
                                                                  else {}))
    if "checkpoint" in change:
        b["checkpoint"] = change["checkpoint"]
    if "seed_scheme" in change:  # a report whose episodes were numbered another way
        b["seed_scheme"] = change["seed_scheme"]
    if "drop_episodes" in change:  # a report written before per-episode values were recorded
        for res in b["results"].values():
            del res["episode_metric"]
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    inputs = [str(tmp_path / "a.json")] + ([] if "one" in change else [str(tmp_path / "b.json")])
    out = tmp_path / "merged.json"
    assert main(["--merge", *inputs, "--json", str(out), *change.get("extra_args", [])]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not out.exists(), "nothing is written when the merge is refused"


def test_merge_accepts_other_dataset_paths_only_when_asked_and_keeps_them(tmp_path, capsys):
    eps = [(1.0, 0.0, 10.0), (2.0, 0.0, 10.0)]
    a, b = _report(0, eps, 0.1, eps, 0.1), _report(1, eps, 0.1, eps, 0.1)
    a["rl_dataset"], b["rl_dataset"] = "/scratch/one/go2_data", "/scratch/two/go2_data"  # regenerated elsewhere
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, report in zip(paths, (a, b), strict=True):
        path.write_text(json.dumps(report))
    out = tmp_path / "merged.json"
    assert main(["--merge", *map(str, paths), "--json", str(out)]) == 2
    assert "rl_dataset" in capsys.readouterr().err and not out.exists()
    assert main(["--merge", *map(str, paths), "--json", str(out), "--merge-may-differ", "rl_dataset"]) == 0
    merged = json.loads(out.read_text())
    assert merged["allowed_differences"] == {"rl_dataset": {str(paths[0]): a["rl_dataset"],
                                                            str(paths[1]): b["rl_dataset"]}}  # fmt: skip
    # anything else still has to agree, asked or not
    b["config"]["eval_s"] = 5.0
    paths[1].write_text(json.dumps(b))
    assert main(["--merge", *map(str, paths), "--json", str(tmp_path / "m2.json"),
                 "--merge-may-differ", "rl_dataset"]) == 2  # fmt: skip
    assert "config.eval_s" in capsys.readouterr().err
    # a run is not a merge: the option is refused there instead of silently ignored
    assert main(["--task", "go2/foam", "--json", str(tmp_path / "run.json"), "--merge-may-differ", "rl_dataset"]) == 2
    assert "--merge only" in capsys.readouterr().err


def test_committed_reports_without_episode_values_still_summarise_print_and_plot(tmp_path, capsys):
    from pathlib import Path

    from simdist_core.eval.adaptation_cli import _print_table
    from simdist_core.eval.adaptation_report import plot, summarise

    path = Path(__file__).resolve().parents[2] / "checkpoints" / "results" / "adaptation_go2_ptfe_slope.json"
    report = json.loads(path.read_text())
    summary = summarise(report["results"])
    for method, stored in report["summary"].items():
        assert summary[method] == stored, "the single-seed summary keys are computed as before"
    plot(report, tmp_path / "old.png")
    _print_table(report)
    assert (tmp_path / "old.png").stat().st_size > 1000 and "dynamics_only" in capsys.readouterr().out


def test_dynamics_only_is_compared_paired_with_every_rival_on_its_minute_marks():
    """Dynamics-only gets a paired difference (with its interval) against each RL baseline, full finetuning and
    the compared checkpoint's dynamics-only, at the minute marks they share; no other method gets rivals."""
    from simdist_core.eval.adaptation import point_fields
    from simdist_core.eval.adaptation_report import rivals_of, summarise

    def series(minutes, episode_lists):
        points = [point_fields(_point([(p, 0.0, 10.0) for p in eps], 0.1), "forward_progress_m")
                  for eps in episode_lists]
        return {"minutes": minutes, **{k: [p[k] for p in points] for k in points[0]}}

    zero = [1.0, 2.0, 1.5, 0.5]
    results = {"zero_shot": series([0.0], [zero]),
               "dynamics_only": series([0.0, 5.0], [zero, [5.0, 6.0, 5.5, 4.5]]),
               "full_finetune": series([0.0, 5.0], [zero, [0.0, 0.5, 0.1, 0.2]]),
               "iql": series([0.0, 5.0], [[0.0] * 4, [4.0, 5.0, 4.5, 3.5]]),
               "rlpd": series([0.0, 2.0], [[0.0] * 4, [1.0] * 4]),  # no 5-minute mark: no comparison there
               "zero_shot@eo": series([0.0], [[0.2, 0.1, 0.3, 0.2]]),
               "dynamics_only@eo": series([0.0, 5.0], [[0.2, 0.1, 0.3, 0.2], [2.0, 2.5, 1.5, 2.0]])}
    assert set(rivals_of("dynamics_only", results)) == {"full_finetune", "iql", "rlpd", "dynamics_only@eo"}
    assert set(rivals_of("dynamics_only@eo", results)) == set()  # nothing else ran from that checkpoint
    assert rivals_of("iql", results) == {} and rivals_of("full_finetune", results) == {}
    summary = summarise(results)
    last = summary["dynamics_only"]["by_minute"][-1]
    assert last["metric_minus_iql"] == pytest.approx(1.0)
    low, high = last["metric_minus_iql_ci95"]
    assert 0.0 < low <= 1.0 <= high  # every episode of dynamics-only is 1 m ahead of the same IQL episode
    assert last["metric_minus_dynamics_only@eo"] == pytest.approx(3.25)
    assert last["metric_minus_full_finetune"] == pytest.approx(5.05)
    assert "metric_minus_rlpd" not in last and "metric_minus_rlpd" in summary["dynamics_only"]["by_minute"][0]
    assert "metric_minus_dynamics_only" not in str(summary["iql"])


def test_merge_joins_a_report_written_before_a_new_zero_shot_yardstick_and_keeps_it():
    """Reports of one seed from before and after the benchmark added a field (``reward_error_task``) join on the
    fields both hold; the episodes themselves must be in both and agree."""
    from simdist_core.eval.adaptation import METHOD_CHOICES
    from simdist_core.eval.adaptation_report import merge_reports

    eps = [(1.0, 0.0, 60.0), (3.0, 0.0, 60.0)]
    a = _report(0, eps, 0.4, [(2.0, 0.0, 60.0), (4.0, 0.0, 60.0)], 0.1)
    b = _report(1, eps, 0.2, [(6.0, 0.0, 60.0), (8.0, 0.0, 60.0)], 0.3)
    a_rl, b_rl = (_as_rlpd(r, [(0.5, 1.0, 30.0), (0.5, 1.0, 30.0)]) for r in (a, b))
    for old in (a, b):
        old["results"]["zero_shot"].pop("reward_error_task", None)
    for new in (a_rl, b_rl):
        new["results"]["zero_shot"]["reward_error_task"] = [0.7]
    merged = merge_reports([a, b, a_rl, b_rl], ["a.json", "b.json", "ar.json", "br.json"], METHOD_CHOICES)
    assert merged["results"]["zero_shot"]["reward_error_task_per_seed"] == [[0.7, 0.7]]
    assert merged["summary"]["dynamics_only"]["by_minute"][-1]["metric_minus_rlpd"] == pytest.approx(4.5)
    # a field both hold must agree, and a zero-shot point without its episodes does not join
    a_rl["results"]["zero_shot"]["latent_error"] = [123.0]
    with pytest.raises(ValueError, match="results.zero_shot"):
        merge_reports([a, b, a_rl, b_rl], ["a.json", "b.json", "ar.json", "br.json"], METHOD_CHOICES)
    a_rl["results"]["zero_shot"]["latent_error"] = a["results"]["zero_shot"]["latent_error"]
    del a["results"]["zero_shot"]["episode_metric"]
    with pytest.raises(ValueError, match="results.zero_shot"):
        merge_reports([a, b, a_rl, b_rl], ["a.json", "b.json", "ar.json", "br.json"], METHOD_CHOICES)


def test_heading_hold_shapes_every_episodes_command_and_needs_a_velocity_command(tmp_path):
    """``heading_hold``: collection (what finetuning learns from) and evaluation see the held command, whose yaw rate
    turns the robot back to its start heading where the task's own command asks for none."""
    import numpy as np
    from simdist_core.data.dataset import Dataset

    torch.set_num_threads(1)
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, tiny_model("go2"), version=1)
    out = tmp_path / "r.json"
    assert main([*TINY_RUN, "--checkpoint", str(ckpt), "--set", "heading_hold=true", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["config"]["heading_hold"] is True
    for part in ("dynamics_only", "heldout"):
        data = Dataset(tmp_path / "r_work" / part)
        yaw_rates = data.gather("obs/command", np.arange(data.n_steps))[:, 2]  # go2/foam asks for yaw rate 0
        assert np.any(yaw_rates != 0.0) and np.all(np.abs(yaw_rates) <= 0.5 + 1e-6), part
    with pytest.raises(ValueError, match="heading_hold"):
        AdaptationConfig(task="ur5e/peg_shifted", heading_hold=True)
