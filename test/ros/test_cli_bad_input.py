"""Every ``simdist`` subcommand answers bad input the same way, before doing any work.

One table row per bad input: the command must exit with status 2, print exactly one line on stderr
that names the bad value (and, where a valid choice is close, suggests it), print nothing on stdout,
raise nothing (no traceback) and leave nothing on disk (the test runs in an empty folder that also
receives every output path). Rows are run in-process through the dispatcher (``simdist_core.cli.main``),
as the ``simdist`` console script runs them; a few run as real subprocesses too.
"""

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from simdist_core import cli

ROOT = Path(__file__).resolve().parents[2]
GO2 = str(ROOT / "checkpoints" / "go2")
UR5E = str(ROOT / "checkpoints" / "ur5e")
GEN = ["generate", "--robot", "go2", "--task", "flat", "--steps", "10", "--out", "out"]
EVAL = ["eval", "--checkpoint", GO2, "--task", "go2/flat"]
FINETUNE = ["finetune", "--checkpoint", GO2, "--data", "data", "--out", "out"]
PRETRAIN = ["pretrain", "--data", "data", "--robot", "go2", "--out", "out"]
ADAPT = ["bench", "adaptation", "--json", "adapt.json"]
SLIP = ["figure", "slip", "--before", GO2, "--after", GO2, "--plot", "slip.png"]

# (argv, text the one line must contain, the suggestion it must make or None)
CASES = [
    # the dispatcher
    (["evl"], "'evl'", "did you mean 'eval'?"),
    (["bench", "planer"], "'bench planer'", "did you mean 'bench planner'?"),
    (["config", "shw", "go2/flat"], "'config shw'", "did you mean 'config show'?"),
    # generate
    ([*GEN[:4], "fom", *GEN[5:]], "'fom'", "did you mean 'foam'?"),
    (["generate", "--robot", "go3", *GEN[3:]], "'go3'", "did you mean 'go2'?"),
    ([*GEN, "--set", "terrain.frction=1"], "'terrain.frction'", "did you mean 'terrain.friction'?"),
    ([*GEN, "--set", "data.behaviour.expert_fracton=1"], "'data.behaviour.expert_fracton'",
     "did you mean 'data.behaviour.expert_fraction'?"),
    ([*GEN, "--set", "terrain.friction=slippery"], "'slippery'", None),
    ([*GEN[:6], "0", *GEN[7:]], "--steps 0", None),
    ([*GEN, "--shard", "5", "--num-shards", "2"], "--shard 5", None),
    ([*GEN, "--sed", "1"], "'--sed'", "did you mean '--seed'?"),
    # pretrain
    ([*PRETRAIN, "--set", "optim.lrr=1"], "'optim.lrr'", "did you mean 'optim.lr'?"),
    ([*PRETRAIN, "--planner-preset", "cpus"], "'cpus'", "did you mean 'cpu'?"),
    (PRETRAIN, "'data' does not exist", None),
    # finetune
    ([*FINETUNE, "--set", "optim.lrr=1"], "'optim.lrr'", "did you mean 'optim.lr'?"),
    ([*FINETUNE, "--parts", "dynamcs"], "'dynamcs'", "did you mean 'dynamics'?"),
    (["finetune", "--checkpoint", GO2, "--bag", "bag", "--out", "out"], "'bag' does not exist", None),
    (["finetune", "--checkpoint", "nope", "--data", "data", "--out", "out"], "'nope' does not exist", None),
    # eval
    (["eval", "--checkpoint", GO2, "--task", "go2/nope"], "'go2/nope'", "did you mean"),
    ([*EVAL, "--set", "terrain.frction=1"], "'terrain.frction'", "did you mean 'terrain.friction'?"),
    ([*EVAL, "--planner", "num_sample=3"], "'num_sample'", "did you mean 'num_samples'?"),
    ([*EVAL, "--preset", "cpus"], "'cpus'", "did you mean 'cpu'?"),
    ([*EVAL, "--episodes", "0"], "--episodes 0", None),
    (["eval", "--checkpoint", GO2, "--task", "ur5e/peg"], "'ur5e/peg' is a ur5e task", None),
    # figure slip
    ([*SLIP, "--horizon", "0"], "--horizon 0", None),
    ([*SLIP[:5], UR5E, *SLIP[6:]], "the after model is for ur5e", None),
    ([*SLIP, "--task", "go2/fom"], "'go2/fom'", "did you mean 'go2/foam'?"),
    # checkpoint
    (["checkpoint", "verfy", GO2], "'verfy'", "did you mean 'verify'?"),
    (["checkpoint", "verify", "nope"], "'nope' does not exist", None),
    # config show
    (["config", "show", "go2/fom"], "'go2/fom'", "did you mean 'go2/foam'?"),
    # bench planner / generate / adaptation
    (["bench", "planner", "--preset", "cpus"], "'cpus'", "did you mean 'cpu'?"),
    (["bench", "planner", "--ticks", "0"], "--ticks 0", None),
    (["bench", "planner", "--checkpoint", "nope"], "'nope' does not exist", None),
    (["bench", "generate", "--robot", "go2", "--json", "g.json", "--task", "fom"], "'fom'", "did you mean 'foam'?"),
    ([*ADAPT, "--task", "go2/fom"], "'go2/fom'", "did you mean 'go2/foam'?"),
    ([*ADAPT, "--methods", "dynamics_onli"], "'dynamics_onli'", "did you mean 'dynamics_only'?"),
    ([*ADAPT, "--set", "eval_episode=2"], "'eval_episode'", "did you mean 'eval_episodes'?"),
    ([*ADAPT, "--env", "terrain.frction=1"], "'terrain.frction'", "did you mean 'terrain.friction'?"),
    ([*ADAPT, "--planner", "num_sample=1"], "'num_sample'", "did you mean 'num_samples'?"),
    ([*ADAPT, "--minutes", "0,a"], "'a'", None),
    (["bench", "budget", "--checkpoint", GO2, "--task", "go2/fom"], "'go2/fom'", "did you mean 'go2/foam'?"),
    (["bench", "budget", "--checkpoint", GO2, "--budgets", "referense"], "'referense'",
     "did you mean 'reference'?"),
    (["bench", "budget", "--checkpoint", "nope"], "'nope' does not exist", None),
    # bench soak / graph / parity
    (["bench", "soak", "--task", "go2/fom"], "'go2/fom'", "did you mean 'go2/foam'?"),
    (["bench", "soak", "--set", "plnner.seed=1"], "'plnner'", "did you mean 'planner'?"),
    (["bench", "soak", "--set", "finetuner.cpu_dutyy=0.5"], "'cpu_dutyy'", "did you mean 'cpu_duty'?"),
    (["bench", "soak", "--set", "finetuner.cpu_duty=5"], "cpu_duty=5", None),
    (["bench", "soak", "--set", "finetuner.cpu_duty=abc"], "'abc'", None),
    (["bench", "soak", "--checkpoint", UR5E], "is a ur5e checkpoint, not go2", None),
    (["bench", "graph", "--executor", "singel"], "'singel'", "did you mean 'single'?"),
    (["bench", "graph", "--compare", "finetuner.cpu_dty=1,0.5"], "'cpu_dty'", "did you mean 'cpu_duty'?"),
    (["bench", "parity", "--task", "go2/flat,go2/fom"], "'go2/fom'", "did you mean 'go2/foam'?"),
    (["bench", "parity", "--episodes", "0"], "--episodes 0", None),
    (["bench", "parity", "--set", "planner.reset_on_episode_strat=false"], "'reset_on_episode_strat'",
     "did you mean 'reset_on_episode_start'?"),
    # launch
    (["launch", "go3"], "'go3'", "did you mean 'go2'?"),
    (["launch", "go2", "--arg", "simm=true"], "'simm'", "did you mean 'sim'?"),
    (["launch", "go2", "--arg", "sim=maybe"], "'maybe'", None),
    (["launch", "go2", "--task", "go2/fom"], "'go2/fom'", "did you mean 'go2/foam'?"),
    (["launch", "go2", "--param", "finetuner.cpu_dutyy=1"], "'cpu_dutyy'", "did you mean 'cpu_duty'?"),
    (["launch", "go2", "--param", "plnner.seed=1"], "'plnner'", "did you mean 'planner'?"),
    # demo
    (["demo", "--task", "go2/fom"], "'go2/fom'", "did you mean 'go2/foam'?"),
    (["demo", "--robot", "ur5"], "'ur5'", "did you mean 'ur5e'?"),
    (["demo", "--minutes", "0"], "--minutes 0", None),
    (["demo", "--eval-episodes", "-1"], "--eval-episodes -1", None),
    (["demo", "--set", "planner.adapted_prior_wieght=500"], "'adapted_prior_wieght'",
     "did you mean 'adapted_prior_weight'?"),
    (["demo", "--set", "planner.adapted_prior_weight=lots"], "adapted_prior_weight='lots' is not a float", None),
    (["demo", "--set", "sim_robot.lockstep=true"], "use the demo's --lockstep option", None),
    (["demo", "--no-adapt", "--set", "finetuner.cpu_duty=0.5"], "finetuner", None),
]


def _run(argv):
    """``simdist <argv>`` in-process: (exit status, stdout, stderr) as the console script would give them."""
    try:
        return cli.main(argv)
    except SystemExit as exc:  # argparse's own refusals exit from inside parse_args
        return exc.code


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("argv", "names", "suggests"), CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_bad_input_is_one_line_exit_2_and_nothing_on_disk(argv, names, suggests, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # every relative output path, and every default output folder, lands here
    # Earlier in-process ROS tests leave rclpy futures in reference cycles; collected at a random later moment,
    # each prints "exception was never retrieved" to stderr. Collect them now, so stderr holds only this command's.
    gc.collect()
    capsys.readouterr()
    code = _run(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(lines) == 1, err
    assert names in lines[0], lines[0]
    assert suggests is None or suggests in lines[0], lines[0]
    assert "Traceback" not in err and out == ""
    assert not list(tmp_path.iterdir()), f"left on disk: {list(tmp_path.rglob('*'))}"


def test_bench_alone_lists_its_subcommands(capsys):
    assert _run(["bench"]) == 2
    listed = capsys.readouterr().out
    for sub in ("planner", "generate", "adaptation", "soak", "parity", "graph"):
        assert f"bench {sub}" in listed


def test_launch_help_lists_the_launch_arguments(capsys):
    assert _run(["launch", "go2", "--help"]) == 0
    text = capsys.readouterr().out
    for name in ("sim", "task", "checkpoint", "adapt", "record", "rviz", "output_dir"):
        assert f"\n  {name} " in text, name
    assert "default 'go2/foam'" in text


def test_help_shows_defaults(capsys):
    assert _run(["eval", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # help lines wrap anywhere
    assert "seed .. seed + episodes - 1) (default: 5)" in text and "(default: cpu)" in text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("argv", [["eval", "--checkpoint", GO2, "--task", "go2/nope"],
                                  [*FINETUNE, "--set", "optim.lrr=1"], ["bench", "soak", "--set", "plnner.seed=1"]],
                         ids=lambda a: " ".join(a[:2]))
def test_the_console_script_answers_in_one_line(argv, tmp_path):
    simdist = Path(sys.executable).with_name("simdist")
    result = subprocess.run([str(simdist), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=100)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "did you mean" in result.stderr and not list(tmp_path.iterdir())
