"""Import every robot's task module so their ``register_task`` calls run."""

import importlib

for _module in ("simdist_core.sim.go2_tasks", "simdist_core.sim.ur5e_tasks"):
    try:
        importlib.import_module(_module)
    except ModuleNotFoundError as exc:  # a robot module not written yet must not hide the other
        if exc.name != _module:
            raise
