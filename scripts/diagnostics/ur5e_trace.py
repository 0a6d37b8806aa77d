"""Where does the UR5e model take the peg? Trace episodes of the planner, the policy prior alone, or the expert.

Prints every ``--every`` control steps the tip position relative to the hole top in the fixture frame (mm),
the yaw error, the contact force, the action taken and the expert's action in the same state; then the
episode's metrics. On the table leg also the thread turns counted so far, the tip's depth minus the depth the
thread wants (mm; beyond ``thread.slip_tol_m`` turning does not count) and wrist_3's room to its servo limit in
the screwing direction (rad). This is how the retired image-only UR5e model was diagnosed (2026-11-30): its prior
went straight down wherever it started and pressed on the fixture top 7-20 mm from the hole, i.e. it had
not learned to locate the hole from the 64 px camera.

    python scripts/diagnostics/ur5e_trace.py --checkpoint checkpoints/ur5e --mode prior --episodes 2
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.config import parse_overrides
from simdist_core.data.history import ObservationHistory
from simdist_core.eval.closed_loop import make_planner
from simdist_core.experts.ur5e_expert import make_ur5e_expert
from simdist_core.sim.base import make_env


def thread_row(env: object, info: dict) -> str:
    """Table leg: turns counted, depth minus the thread's depth (mm), wrist_3's room to its servo limit (rad).

    Screwing in (clockwise from above) turns wrist_3 towards its upper limit (the task pre-rotates it to -4 rad).
    """
    low = env.sim.lowlevel
    room = float(low.q_hi[5] - env.data.qpos[low.qpos_adr[5]])
    depth = info["depth_m"]
    turns = env.thread_progress_rad / (2 * np.pi)
    return f"{turns:.2f} {1e3 * (depth - env.helix_depth_m()):+.1f} {room:+.2f}"


def main() -> None:
    """Parse the arguments, drive the episodes and print the trace."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="checkpoints/ur5e")
    parser.add_argument("--task", default="ur5e/peg")
    parser.add_argument("--mode", choices=("mppi", "prior", "expert"), default="mppi")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--set", dest="env_set", action="append", default=[], metavar="KEY=VALUE",
                        help="task config override (repeatable)")
    parser.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                        help="planner config override (repeatable)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, manifest = load_checkpoint(args.checkpoint)
    model.eval().requires_grad_(False)
    env = make_env(args.task, parse_overrides(args.env_set))
    planner = make_planner(model, manifest, "cpu", parse_overrides(args.planner_set), args.seed)
    for episode in range(args.episodes):
        history = ObservationHistory(env.spec)
        history.reset(env.reset(seed=args.seed + episode))
        planner.reset()
        expert = make_ur5e_expert(env)
        expert.reset(env, np.random.default_rng(episode))
        leg = env.cfg.task == "table_leg"
        print(f"episode {episode}: step, tip - hole top (x, y, z mm), yaw err (rad), force (N), action, expert"
              + (", turns, depth - thread depth (mm), wrist_3 room (rad)" if leg else ""))
        for step in range(env.max_steps):
            model_input = history.model_input("cpu")
            expert_action = expert.act(env)  # advances the expert's phase as if it were acting
            with torch.no_grad():
                if args.mode == "prior":
                    action = model.pi(model.encode(model_input))[0, 0].numpy()
                elif args.mode == "mppi":
                    action = planner.plan(model_input).action
                else:
                    action = expert_action
            action = np.clip(action, -1.0, 1.0).astype(np.float32)
            result = env.step(action)
            history.record_action(action)
            history.push(result.obs)
            info = result.info
            if step % args.every == 0 or result.terminated:
                rel = np.array([info["rel_x_m"], info["rel_y_m"], info["rel_z_m"]]) * 1e3
                line = (f"  {step:4d} {np.round(rel, 1)} {info['yaw_err_rad']:+.3f} {info['contact_force_n']:6.1f} "
                        f"{np.round(action, 2)} {np.round(expert_action, 2)}")
                if leg:
                    line += f" {thread_row(env, info)}"
                print(line)
            if result.terminated or result.truncated:
                break
        print(f"  -> {env.metrics()}")
    env.close()


if __name__ == "__main__":
    main()
