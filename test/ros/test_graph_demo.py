"""``simdist demo`` bookkeeping (pure: no graph) and its argument errors."""

from simdist_ros import demo


def _robot(t_s: float, progress_m: float, commanded_m: float = 0.0, **extra: str) -> dict[str, str]:
    """The sim robot's diagnostics values as the demo receives them (strings)."""
    return {"sim_time_s": str(t_s), "progress_m": str(progress_m), "commanded_m": str(commanded_m), **extra}


def test_go2_progress_follows_the_robots_running_distance_and_tracks_swaps():
    prog = demo.Progress(kind="distance")
    for i in range(121):  # 0.1 m/s forward for 120 s, one diagnostics message a second
        prog.on_robot(_robot(float(i), 0.1 * i))
    prog.on_robot({"sim_time_s": "121.0", "falls": "1"})  # a message without the distance changes nothing
    prog.on_robot(_robot(122.0, 12.1))
    assert abs(prog.total - 12.1) < 1e-9 and prog.falls == [(121.0, 1.0)]
    # window [62 s, 122 s]: 0.1 m/s from 62 to 120 s (5.8 m) + 0.1 m after
    assert abs(prog.last_minute() - 5.9) < 1e-9
    prog.on_planner({"model_version": "0"})
    prog.on_planner({"model_version": "0"})
    prog.on_planner({"model_version": "1"})
    assert prog.swaps == [(122.0, "1")]


def test_ur5e_progress_counts_successful_episodes_once():
    prog = demo.Progress(kind="success")
    stream = [(1, 0.0), (1, 1.0), (1, 1.0), (2, 0.0), (3, 0.0), (3, 1.0)]
    for t, (episode, success) in enumerate(stream):
        prog.on_robot({"sim_time_s": str(t), "episodes": str(episode), "metric/success": str(success)})
    assert prog.total == 2


def test_plot_written(tmp_path):
    prog = demo.Progress(kind="distance")
    for i in range(10):
        prog.on_robot(_robot(float(i), 0.05 * i))
    prog.swaps.append((5.0, "1"))
    path = demo.plot_progress(prog, "m forward", "test", tmp_path / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_refuses_missing_checkpoint(tmp_path, capsys):
    assert demo.main(["--checkpoint", str(tmp_path / "nope")]) == 2
    assert "nope' does not exist" in capsys.readouterr().err


def test_adaptation_phases_compare_the_shipped_model_with_the_last_minute_of_adapted_ones():
    prog = demo.Progress(kind="distance")
    for i in range(181):  # 0.05 m/s until the first swap at 60 s, 0.075 m/s until 120 s, then 0.1 m/s (as asked)
        x = 0.05 * min(i, 60) + 0.075 * max(0, min(i, 120) - 60) + 0.1 * max(0, i - 120)
        prog.on_robot(_robot(float(i), x, 0.1 * i, falls=str(min(i, 60) // 20)))  # 3 falls before the swap
    prog.swaps += [(60.0, "2"), (120.0, "3"), (175.0, "4")]
    phases = prog.phases(after_s=60.0)
    assert abs(phases["shipped"]["progress_per_min"] - 3.0) < 1e-6
    # the last swap is 5 s before the end: the adapted phase is the last minute (120-180 s), models v3 and v4
    assert (phases["adapted"]["from_s"], phases["adapted"]["models"]) == (120.0, "3,4")
    assert abs(phases["adapted"]["progress_per_min"] - 6.0) < 1e-6
    assert phases["shipped"]["falls_per_min"] == 3.0 and phases["adapted"]["falls_per_min"] == 0.0
    assert phases["ratio"]["progress_adapted_over_shipped"] == 2.0
    assert phases["shipped"]["progress_over_commanded"] == 0.5 and phases["adapted"]["progress_over_commanded"] == 1.0
    assert phases["ratio"]["tracking_adapted_over_shipped"] == 2.0
    no_swap = demo.Progress(kind="distance")
    no_swap.on_robot(_robot(0.0, 0.0))
    no_swap.on_robot(_robot(30.0, 1.0))
    assert no_swap.phases()["adapted"]["progress_per_min"] is None


def test_fixed_seed_evaluation_compares_both_models_on_the_same_episodes(tmp_path, monkeypatch):
    import torch
    from node_harness import tiny_world_model
    from simdist_core.checkpoint import save_checkpoint
    from simdist_core.eval import closed_loop

    shipped, adapted = tmp_path / "shipped", tmp_path / "run" / "checkpoints" / "v0003"
    save_checkpoint(shipped, tiny_world_model("go2", seed=0), version=1)
    save_checkpoint(adapted, tiny_world_model("go2", seed=1), version=3)
    threads_seen, evaluate = [], closed_loop.evaluate

    def spy(*args, **kwargs):
        threads_seen.append(torch.get_num_threads())
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(closed_loop, "evaluate", spy)
    caller_threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        ev = demo.fixed_seed_evaluation("go2/flat", shipped, adapted, episodes=2, seconds=0.2)
        assert torch.get_num_threads() == 2, "the caller's thread count is restored"
    finally:
        torch.set_num_threads(caller_threads)
    assert threads_seen == [1, 1], "both models are evaluated on one thread, as the planner node plans"
    assert ev["first_seed"] == demo.EVAL_FIRST_SEED and ev["metric"] == "forward_progress_m"
    assert ev["torch_threads"] == 1
    for name in ("shipped", "adapted"):
        assert [e["duration_s"] <= 0.2 + 1e-9 for e in ev[name]["per_episode"]] == [True, True]
        assert ev[name]["planner_overrides"] == {"prior_weight": "100"}  # the Go2 graph's planner, for both models
    if "adapted_over_shipped" in ev:  # a random tiny model may walk backwards: then there is no ratio
        low, high = ev["adapted_over_shipped"][1:]
        assert low <= ev["adapted_over_shipped"][0] <= high
    else:
        assert "undefined" in ev["adapted_over_shipped_error"]
    text = demo._evaluation_lines(ev, "m forward")
    assert "2 episodes, seeds 1001.." in text and "adapted / shipped" in text

    prog = demo.Progress(kind="distance")
    assert demo._last_adapted(tmp_path / "run", prog) is None, "no swap: nothing adapted to evaluate"
    prog.swaps.append((50.0, "3"))
    assert demo._last_adapted(tmp_path / "run", prog) == adapted
    prog.swaps.append((80.0, "4"))
    assert demo._last_adapted(tmp_path / "run", prog) is None, "a version whose folder is not there"


def test_fixed_seed_evaluation_video_shows_both_models_side_by_side_and_changes_no_figure(tmp_path):
    from node_harness import tiny_world_model
    from simdist_core.checkpoint import save_checkpoint
    from simdist_core.eval.video import VideoConfig, read_video

    shipped, adapted = tmp_path / "shipped", tmp_path / "v0003"
    save_checkpoint(shipped, tiny_world_model("go2", seed=0), version=1)
    save_checkpoint(adapted, tiny_world_model("go2", seed=1), version=3)
    plain = demo.fixed_seed_evaluation("go2/flat", shipped, adapted, episodes=2, seconds=0.2)
    video = tmp_path / "both.mp4"
    ev = demo.fixed_seed_evaluation("go2/flat", shipped, adapted, episodes=2, seconds=0.2, video=video,
                                    video_cfg=VideoConfig(width=64, height=48))
    for name in ("shipped", "adapted"):
        assert ev[name]["per_episode"] == plain[name]["per_episode"], "the video changed the evaluation"
    meta, frames = read_video(video)
    assert tuple(meta["size"]) == (64 + 4 + 64, 48) and ev["video"] == str(video)
    steps = max(round(e["duration_s"] * 50) for e in (ev["shipped"]["per_episode"][0],
                                                      ev["adapted"]["per_episode"][0]))  # fmt: skip
    assert len(frames) == -(-steps // 2)  # a frame every 2nd control step of the longer episode (10 if none fell)


def test_demo_video_needs_the_fixed_episode_evaluation(capsys):
    assert demo.main(["--video", "--eval-episodes", "0"]) == 2
    assert "--eval-episodes 0 skips" in capsys.readouterr().err


def test_loop_health_warns_when_the_machine_did_not_keep_the_loop():
    """The verdict comes from the robot's and the planner's last diagnostics; a slow run gets advice."""
    slow = demo.loop_health({"steps": "1000", "fresh_command_steps": "640", "achieved_real_time_factor": "0.96"},
                            {"ticks": "640", "missed_ticks": "360"}, rtf=1.0)
    assert slow["verdict"] == "not kept" and slow["fresh_command_share"] == 0.64
    assert slow["planner_ticks_kept"] == 0.64 and "--rtf 0.5" in slow["advice"]
    fine = demo.loop_health({"steps": "1000", "fresh_command_steps": "990"}, {"ticks": "995", "missed_ticks": "5"},
                            rtf=1.0)
    assert fine["verdict"] == "kept" and fine["advice"] == ""
    unknown = demo.loop_health({}, {"ticks": "garbage"}, rtf=1.0)
    assert unknown["verdict"] == "unknown" and unknown["planner_ticks_kept"] is None and unknown["advice"] == ""
    governed = demo.loop_health({"steps": "1000", "fresh_command_steps": "800", "real_time_factor_now": "0.25",
                                 "real_time_factor_reductions": "4"}, {"ticks": "800", "missed_ticks": "200"},
                                rtf=1.0, rtf_floor=0.25)
    assert governed["verdict"] == "not kept" and governed["rtf_now"] == 0.25 and governed["rtf_reductions"] == 4
    assert "slowed down to 0.25" in governed["advice"] and "--rtf-floor 0.125" in governed["advice"]
    assert governed["cpu_steal_share"] is None and "hypervisor" not in governed["advice"]


def test_loop_health_names_the_hypervisor_when_it_took_cpu_from_a_slowed_run():
    """A governed run that kept its commands fresh but slowed its clock on a VM with notable steal says why."""
    robot = {"steps": "1000", "fresh_command_steps": "970", "real_time_factor_now": "0.6",
             "real_time_factor_reductions": "3"}
    planner = {"ticks": "1000", "missed_ticks": "3"}
    stolen = demo.loop_health(robot, planner, rtf=1.0, rtf_floor=0.25, cpu={"busy": 0.6, "idle": 0.16, "steal": 0.24})
    assert stolen["verdict"] == "kept" and stolen["cpu_steal_share"] == 0.24
    assert "hypervisor took 24 %" in stolen["advice"] and "something else running" not in stolen["advice"]
    saturated = demo.loop_health(robot, planner, rtf=1.0, rtf_floor=0.25, cpu={"busy": 0.99, "idle": 0.01, "steal": 0})
    assert "99 % busy or stolen" in saturated["advice"] and "hypervisor" not in saturated["advice"]
    quiet = demo.loop_health(robot, planner, rtf=1.0, rtf_floor=0.25, cpu={"busy": 0.6, "idle": 0.39, "steal": 0.01})
    assert quiet["advice"] == ""  # steal below the notable share: not blamed
    unslowed = demo.loop_health({"steps": "1000", "fresh_command_steps": "999"}, planner, rtf=1.0,
                                cpu={"busy": 0.5, "idle": 0.2, "steal": 0.3})
    assert unslowed["advice"] == ""  # nothing went wrong: nothing to explain


def test_rtf_floor_above_the_rtf_is_refused(capsys):
    assert demo.main(["--rtf", "0.5", "--rtf-floor", "0.75"]) == 2
    assert "--rtf-floor 0.75 is above --rtf 0.5" in capsys.readouterr().err


def test_set_pairs_reach_the_graphs_nodes_typed_beside_the_demos_clock_options():
    args = demo._parse(["--rtf", "0.5", "--rtf-floor", "0.2", "--set", "planner.adapted_prior_weight=500",
                        "--set", "encoder.command_ramp_s=4"])
    launch = demo.launch_arguments(args, "go2/foam", demo.Path("checkpoints/go2"), demo.Path("runs/x"))
    params = demo.node_parameters(args, launch)
    assert params["planner"] == {"adapted_prior_weight": 500.0}  # an int for a float row, typed as the node declares
    assert isinstance(params["planner"]["adapted_prior_weight"], float)
    assert params["encoder"] == {"command_ramp_s": 4.0}
    assert params["sim_robot"] == {"real_time_factor": 0.5, "lockstep": False, "real_time_factor_floor": 0.2}
    assert "finetuner" not in params and launch["adapt"] == "true"


def test_fixed_seed_evaluation_runs_the_planner_and_ramp_the_set_pairs_gave_the_graph(tmp_path):
    from node_harness import tiny_world_model
    from simdist_core.checkpoint import save_checkpoint

    shipped, adapted = tmp_path / "shipped", tmp_path / "v0003"
    save_checkpoint(shipped, tiny_world_model("go2", seed=0), version=1)
    save_checkpoint(adapted, tiny_world_model("go2", seed=1), version=3)
    sets = ["planner.planner_overrides=[prior_weight=10]", "encoder.command_ramp_s=2.0"]
    ev = demo.fixed_seed_evaluation("go2/flat", shipped, adapted, episodes=1, seconds=0.1, sets=sets)
    assert ev["set"] == sets and ev["command_ramp_s"] == 2.0
    for name in ("shipped", "adapted"):
        assert ev[name]["planner_overrides"] == {"prior_weight": "10"}  # the parameter file's 100, replaced
