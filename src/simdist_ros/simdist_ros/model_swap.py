"""Checkpoint loading and the off-control-thread hot swap used by the planner node.

The finetuner announces a checkpoint on ``model/update`` as JSON ``{path, version, parts_changed, sha256}``.
``ModelSwapper`` verifies and loads it in its own thread (file and part hashes, shapes, finiteness via
``simdist_core.checkpoint.load_checkpoint``; the encoder's part hash unchanged; the manifest's
``weights_sha256`` and version equal to the announced ones) and hands the control tick a ready model;
the tick swaps the planner's reference between two plans (``MPPIPlanner.swap_model``). A refused
checkpoint is logged with its reason and the old model keeps running.
Memory: one pending announcement and at most one verified candidate model.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simdist_core.config import apply_overrides, from_dict, parse_overrides

from simdist_ros.runtime import manifest_get

FROZEN_PARTS = ("encoder",)
"""Parts a live update may never change: the encoder node runs them and never reloads."""


@dataclass(frozen=True, kw_only=True)
class Announcement:
    """A parsed model-update message."""

    path: str
    """Checkpoint directory."""
    version: str
    """Version label of the new checkpoint."""
    parts_changed: tuple[str, ...]
    """Model parts whose weights differ from the parent."""
    sha256: str
    """Hash announced by the finetuner; must equal the manifest's."""


def parse_announcement(text: str) -> Announcement:
    """Parse and check a model-update JSON string.

    Raises:
        ValueError: not JSON, missing keys, or wrong types (named in the message).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"model update is not JSON ({exc}): {text[:200]!r}") from None
    if not isinstance(data, dict):
        raise ValueError(f"model update must be a JSON object, got {type(data).__name__}")
    missing = [k for k in ("path", "version", "parts_changed", "sha256") if k not in data]
    if missing:
        raise ValueError(f"model update lacks {missing}; got keys {sorted(data)}")
    parts = data["parts_changed"]
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise ValueError(f"parts_changed must be a list of part names, got {parts!r}")
    if not isinstance(data["path"], str) or not isinstance(data["sha256"], str):
        raise ValueError("path and sha256 must be strings")
    return Announcement(path=data["path"], version=str(data["version"]), parts_changed=tuple(parts),
                        sha256=data["sha256"])  # fmt: skip


def load_model(path: Path | str, device: str) -> tuple[Any, Any]:
    """Load (model, manifest) with every parameter frozen, in eval mode, on ``device``."""
    from simdist_core.checkpoint import load_checkpoint

    model, manifest = load_checkpoint(Path(path), device)
    model = model.eval()
    model.requires_grad_(False)
    return model, manifest


def build_planner(
    model: Any,
    manifest: Any,
    preset: str,
    overrides: tuple[str, ...],
    device: str,
    seed: int,  # noqa: ANN401
) -> Any:  # noqa: ANN401
    """The MPPI planner of a named config with ``key=value`` overrides applied.

    ``preset`` is a ``PRESETS`` name, ``"checkpoint"`` (the config stored beside the weights) or ``"auto"``
    (the stored config if present, else ``"cpu"``).

    Raises:
        KeyError: unknown preset (lists the valid ones) or ``"checkpoint"`` with no stored planner config.
        ValueError: a malformed override.
    """
    from simdist_core.planning.mppi import MPPIPlanner, PlannerConfig, planner_preset

    stored = manifest_get(manifest, "planner_config")
    if preset == "auto":
        preset = "checkpoint" if isinstance(stored, dict) else "cpu"
    if preset == "checkpoint":
        if not isinstance(stored, dict):
            raise KeyError("planner_preset=checkpoint but the checkpoint manifest stores no 'planner' config")
        cfg = from_dict(PlannerConfig, stored)
    else:
        cfg = planner_preset(preset)
    if overrides:
        cfg = apply_overrides(cfg, parse_overrides(overrides))
    return MPPIPlanner(model, cfg, device=device, seed=seed)


class ModelSwapper:
    """Verifies announced checkpoints in a worker thread; the control tick takes the result."""

    def __init__(self, model: Any, manifest: Any, logger: Any, device: str) -> None:  # noqa: ANN401
        self.model = model
        """The model the planner runs now."""
        self.version = str(manifest_get(manifest, "version", "unknown"))
        self._encoder_hash = (manifest_get(manifest, "parts") or {}).get("encoder")
        self._logger = logger
        self._device = device
        self._cond = threading.Condition()
        self._pending: str | None = None
        self._candidate: tuple[Any, str] | None = None
        self._in_swap = False
        self._settling = False
        self._stop = False
        self._counts = {"swaps": 0, "swaps_refused": 0, "missed_ticks_in_swap": 0, "ticks_in_swap": 0}
        self.last_refusal = ""
        self._thread = threading.Thread(target=self._run, name="model_swapper", daemon=True)
        self._thread.start()

    def submit(self, text: str, received_ns: int) -> None:
        """Queue an announcement (a newer one replaces an unprocessed older one)."""
        del received_ns
        with self._cond:
            self._pending = text
            self._in_swap = True
            self._cond.notify()

    def take(self, planner: Any, missed_ticks: int) -> str | None:  # noqa: ANN401
        """Called at the start of every tick: swap in a verified model; returns its version or None."""
        with self._cond:
            if self._in_swap:
                self._counts["missed_ticks_in_swap"] += missed_ticks
                self._counts["ticks_in_swap"] += 1
            if self._settling:  # the window closes one tick after the swap: the new model's first plan counts too
                self._settling = False
                self._in_swap = self._pending is not None or self._candidate is not None
            if self._candidate is None:
                return None
            model, version = self._candidate
            self._candidate = None
            self._settling = True
        try:
            planner.swap_model(model)
        except ValueError as exc:  # the planner refuses the layout: keep running the old model
            self._refuse(str(exc))
            return None
        self.model, self.version = model, version
        self._counts["swaps"] += 1
        return version

    def _refuse(self, reason: str) -> None:
        with self._cond:
            self._counts["swaps_refused"] += 1
            self.last_refusal = reason
            self._in_swap = self._pending is not None or self._candidate is not None
        self._logger.error(f"refused model update, keeping version {self.version}: {reason}")

    def counts(self) -> dict[str, object]:
        """Swap counters and the last refusal reason for diagnostics."""
        with self._cond:
            return {**self._counts, "last_refusal": self.last_refusal or "none"}

    def close(self) -> None:
        """Stop and join the worker thread."""
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join(timeout=10.0)

    # ---- worker ------------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                text, self._pending = self._pending, None
            t0 = time.perf_counter()
            try:
                model, version = self._verify(text)
            except Exception as exc:  # noqa: BLE001  (any failure means: refuse, keep the old model)
                self._refuse(str(exc))
                continue
            if model is None:
                with self._cond:
                    self._in_swap = self._pending is not None or self._candidate is not None
                continue
            verify_ms = (time.perf_counter() - t0) * 1e3
            self._logger.info(
                f"model version {version} verified in {verify_ms:.0f} ms (worker thread); swapping at the next tick"
            )
            with self._cond:
                self._candidate = (model, version)

    def _verify(self, text: str) -> tuple[Any, str]:
        from simdist_core.checkpoint import CheckpointRejected

        ann = parse_announcement(text)
        if ann.version == self.version:
            self._logger.info(f"model version {ann.version} is already running")
            return None, ann.version
        frozen = [p for p in ann.parts_changed if p in FROZEN_PARTS]
        if frozen:
            raise CheckpointRejected(f"announcement says {frozen} changed, but the encoder is frozen during adaptation")
        model, manifest = load_model(ann.path, self._device)  # verifies file hash, part hashes, shapes, finiteness
        sha = manifest_get(manifest, "weights_sha256")
        if sha != ann.sha256:
            raise CheckpointRejected(f"manifest weights_sha256 {sha!r} differs from the announced {ann.sha256!r}")
        if str(manifest_get(manifest, "version")) != ann.version:
            raise CheckpointRejected(f"manifest version {manifest_get(manifest, 'version')} != announced {ann.version}")
        if model.spec != self.model.spec or model.cfg != self.model.cfg:
            raise CheckpointRejected("checkpoint robot spec or model config differs from the running model")
        new_encoder = (manifest_get(manifest, "parts") or {}).get("encoder")
        if new_encoder is None or new_encoder != self._encoder_hash:
            raise CheckpointRejected("encoder weights differ from the running encoder (the encoder is frozen)")
        return model, ann.version
