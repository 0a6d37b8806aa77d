"""Checkpoint loading and the off-control-thread hot swap used by the planner node.

The finetuner announces a checkpoint on ``model/update`` as JSON (:mod:`simdist_ros.model_update`). Anything on
the DDS domain can publish there, so an announcement is a doorbell, never an instruction:

1. Screening, in the subscription callback (CPU only, no I/O): the JSON schema; the HMAC tag over
   (version, weights sha256, part hashes) with the key the finetuner shares through a file
   (:mod:`simdist_core.checkpoint_auth`); a version strictly newer than the running, verified or queued
   one (a replay or a rollback is refused); no frozen part claimed changed. Only a screened announcement
   takes the one pending slot, so a flood of forgeries cannot push a real update out of it.
2. Verification, in the worker thread: the checkpoint is ``<update_dir>/v<version>``, whatever path the
   message names (a named path must be that folder). Its real path and its files must lie inside the
   update directory (no symlink out). The manifest (size-limited) must carry the tagged version and
   hashes; robot and model config must equal the running model's, the weights file must fit that
   config's size and the encoder hash must be unchanged, all checked before any model is built; then
   ``load_checkpoint`` verifies hashes, shapes and finiteness.
3. The swap: the control tick takes the verified model between two plans (``MPPIPlanner.swap_model``).

A refusal is logged with its reason (at most a few lines per 10 s: forgeries can come by the thousand),
counted per kind in the planner's diagnostics (``refused_<kind>``, :data:`REFUSAL_KINDS`), and the running
model keeps running. Memory: one pending announcement and at most one verified candidate model.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from simdist_core.checkpoint_auth import (
    PathOutsideError,
    contained_path,
    is_newer_version,
    verify_tag,
    version_dir_name,
)
from simdist_core.config import from_dict, parse_overrides
from simdist_core.planning.adapted_tie import finetuned_data_steps

from simdist_ros.model_update import FROZEN_PARTS, REFUSAL_KINDS, Announcement, UpdateRefused, parse_announcement
from simdist_ros.runtime import manifest_get


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
    reference: Any = None,  # noqa: ANN401
) -> Any:  # noqa: ANN401
    """The MPPI planner of a named config with ``key=value`` overrides applied.

    ``preset`` is a ``PRESETS`` name, ``"checkpoint"`` (the config stored beside the weights) or ``"auto"``
    (the stored config if present, else ``"cpu"``). ``reference``: the model ``reference_returns`` also scores
    plans with (default: ``model``, kept across hot swaps).

    Raises:
        KeyError: unknown preset (lists the valid ones) or ``"checkpoint"`` with no stored planner config.
        ValueError: a malformed override, or a ``reference`` that differs from ``model`` outside its dynamics.
    """
    from simdist_core.planning.mppi import MPPIPlanner, planner_config_from

    cfg = planner_config_from(manifest_get(manifest, "planner_config"), preset, parse_overrides(overrides))
    return MPPIPlanner(model, cfg, device=device, seed=seed, reference=reference)


class _LogBudget:
    """At most ``burst`` log lines per ``window_s`` (wall clock); reports how many it held back."""

    def __init__(self, burst: int = 5, window_s: float = 10.0) -> None:
        self.burst, self.window_s = burst, window_s
        self._window_start = -1e18
        self._used = 0
        self.suppressed = 0

    def take(self) -> int | None:
        """None when the line must be dropped; else the number of lines dropped since the last one."""
        now = time.monotonic()
        if now - self._window_start >= self.window_s:
            self._window_start, self._used = now, 0
        if self._used >= self.burst:
            self.suppressed += 1
            return None
        self._used += 1
        dropped, self.suppressed = self.suppressed, 0
        return dropped


class ModelSwapper:
    """Screens and verifies announced checkpoints (worker thread); the control tick takes the result.

    Args:
        model: the running model.
        manifest: its manifest (version and part hashes).
        logger: the node logger (``info``/``error``).
        device: where verified models are loaded.
        update_dir: the only folder updates are loaded from (the finetuner's ``output_dir``); None = no updates.
        key: the key shared with the finetuner; None = no updates (every announcement is refused).
    """

    def __init__(self, model: Any, manifest: Any, logger: Any, device: str, *,  # noqa: ANN401
                 update_dir: Path | None = None, key: bytes | None = None) -> None:
        from simdist_core.checkpoint import ModelSlot, weights_size_limit

        self.model = model
        """The model the planner runs now."""
        self._version = int(manifest_get(manifest, "version", 0))
        self.data_steps = finetuned_data_steps(manifest)
        """Steps of this robot's data the running model was finetuned on (its manifest), None if not finetuned."""
        self._encoder_hash = (manifest_get(manifest, "parts") or {}).get("encoder")
        self._max_weights_bytes = weights_size_limit(model)
        self._update_dir = update_dir
        self._key = key
        self._logger = logger
        self._device = device
        # Updates load into a spare model built now, at start-up: building one (1,500 modules for the Go2 model)
        # and walking its modules is most of a verification's Python work, which would otherwise share the GIL
        # with the control tick. After a swap the model that stopped running becomes the spare (the tick no
        # longer touches it), so the two models' slots are kept for the whole run.
        self._running_slot = ModelSlot(model) if self.enabled else None
        self._spare = ModelSlot(self._new_model()) if self.enabled else None
        self._cond = threading.Condition()
        self._pending: Announcement | None = None
        self._candidate: tuple[Any, int, int | None] | None = None  # slot, version, data_steps
        self._in_swap = False
        self._settling = False
        self._stop = False
        self._counts = {"swaps": 0, "swaps_refused": 0, "missed_ticks_in_swap": 0, "ticks_in_swap": 0,
                        "updates_already_running": 0,
                        "last_verify_ms": 0.0, **{f"refused_{kind}": 0 for kind in REFUSAL_KINDS}}
        self._log_budget = _LogBudget()
        self.last_refusal = ""
        self._thread = threading.Thread(target=self._run, name="model_swapper", daemon=True)
        self._thread.start()

    @property
    def version(self) -> str:
        """Version of the running model (a string, as in diagnostics)."""
        return str(self._version)

    @property
    def enabled(self) -> bool:
        """Whether updates can be accepted at all (an update folder and a key are configured)."""
        return self._update_dir is not None and self._key is not None

    def submit(self, text: str, received_ns: int) -> None:
        """Screen an announcement (no I/O) and queue it for verification; a newer one replaces a queued one."""
        del received_ns
        try:
            ann = self._screen(text)
        except UpdateRefused as exc:
            self._refuse(exc)
            return
        if ann is None:
            return
        with self._cond:
            self._pending = ann
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
            slot, version, data_steps = self._candidate
            self._candidate = None
            self._settling = True
        try:
            planner.swap_model(slot.model)
        except ValueError as exc:  # the planner refuses the layout: keep running the old model
            self._return_spare(slot)
            self._refuse(UpdateRefused("config_mismatch", str(exc)))
            return None
        with self._cond:
            retired, self._running_slot = self._running_slot, slot
            self.model, self._version, self.data_steps = slot.model, version, data_steps
            if self._spare is None:  # the planner dropped the retired model in swap_model: updates load into it
                self._spare = retired
            self._counts["swaps"] += 1
        return str(version)

    def _refuse(self, exc: UpdateRefused) -> None:
        reason = exc.reason if len(exc.reason) <= 500 else exc.reason[:500] + "..."  # may quote the sender's text
        with self._cond:
            self._counts["swaps_refused"] += 1
            self._counts[f"refused_{exc.kind}"] += 1
            self.last_refusal = f"{exc.kind}: {reason}"
            self._in_swap = self._pending is not None or self._candidate is not None
            dropped = self._log_budget.take()
        if dropped is not None:
            more = f" ({dropped} more refusals not logged; see refused_* in diagnostics)" if dropped else ""
            self._logger.error(f"refused model update ({exc.kind}), keeping version {self.version}: "
                               f"{reason}{more}")

    def counts(self) -> dict[str, object]:
        """Swap counters, refusals per kind and the last refusal reason for diagnostics."""
        with self._cond:
            return {**self._counts, "updates_enabled": self.enabled, "last_refusal": self.last_refusal or "none"}

    def close(self) -> None:
        """Stop and join the worker thread."""
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join(timeout=10.0)

    # ---- screening (subscription callback: CPU only) -----------------------------------------------
    def _newest_locked(self) -> int:
        """Highest version running, verified or queued (call with the lock held)."""
        versions = [self._version]
        if self._candidate is not None:
            versions.append(self._candidate[1])
        if self._pending is not None:
            versions.append(self._pending.version)
        return max(versions)

    def _screen(self, text: str) -> Announcement | None:
        if not self.enabled:
            raise UpdateRefused("disabled", "this planner has no update_dir or update_key_file, so it accepts no "
                                            "model updates (simdist launch sets both)")
        ann = parse_announcement(text)
        if not verify_tag(self._key, ann.tag, version=ann.version, weights_sha256=ann.weights_sha256,
                          parts=ann.parts):
            raise UpdateRefused("unauthenticated", f"the tag of version {ann.version} does not verify with the key "
                                                   "shared with the finetuner: not an update the finetuner made")
        with self._cond:
            running, newest = self._version, self._newest_locked()
            if ann.version == running:  # the finetuner re-announcing after a restart (or a replay): no refusal
                self._counts["updates_already_running"] += 1
                loggable = self._log_budget.take() is not None
        if ann.version == running:
            if loggable:
                self._logger.info(f"model version {ann.version} is already running")
            return None
        if not is_newer_version(ann.version, newest):
            raise UpdateRefused("not_newer", f"version {ann.version} is not newer than version {newest} "
                                             "(a replayed or rolled-back update)")
        frozen = [p for p in ann.parts_changed if p in FROZEN_PARTS]
        if frozen:
            raise UpdateRefused("frozen_part", f"announcement says {frozen} changed, but the encoder is frozen "
                                               "during adaptation")
        return ann

    # ---- verification (worker thread) --------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                ann, self._pending = self._pending, None
                spare, self._spare = self._spare, None
            t0 = time.perf_counter()
            try:
                slot, data_steps = self._verify(ann, spare)
            except UpdateRefused as exc:
                self._return_spare(spare)  # written only after every check passed: still unused
                self._refuse(exc)
                continue
            except Exception as exc:  # noqa: BLE001  (any failure means: refuse, keep the old model)
                self._return_spare(spare)
                self._refuse(UpdateRefused("invalid", f"{type(exc).__name__}: {exc}"))
                continue
            with self._cond:
                current = max(self._version, self._candidate[1] if self._candidate else -1)
                fresh = is_newer_version(ann.version, current)
                if fresh:
                    replaced, self._candidate = self._candidate, (slot, ann.version, data_steps)
                    if replaced is not None and self._spare is None:  # an older candidate never taken
                        self._spare = replaced[0]
            if not fresh:  # a newer one was verified meanwhile
                self._return_spare(slot)
                self._refuse(UpdateRefused("not_newer", f"version {ann.version} is not newer than {current}"))
                continue
            verify_ms = (time.perf_counter() - t0) * 1e3
            with self._cond:
                self._counts["last_verify_ms"] = round(verify_ms, 1)
            self._logger.info(f"model version {ann.version} verified in {verify_ms:.0f} ms (worker thread); "
                              "swapping at the next tick")

    def _new_model(self) -> Any:  # noqa: ANN401  (a WorldModel of the running model's config)
        from simdist_core.models.world_model import WorldModel

        return WorldModel(self.model.spec, self.model.cfg).to(self._device).eval().requires_grad_(False)

    def _return_spare(self, slot: Any) -> None:  # noqa: ANN401
        """Keep ``slot`` (not running, not a candidate) as the spare if there is none."""
        with self._cond:
            if self._spare is None and slot is not None and slot.model is not self.model:
                self._spare = slot

    def _locate(self, ann: Announcement) -> Path:
        """``<update_dir>/v<version>``, resolved, with the manifest and weights inside the update folder."""
        from simdist_core.checkpoint import MANIFEST_FILE, WEIGHTS_FILE

        root = self._update_dir
        expected = root / version_dir_name(ann.version)
        try:
            real = contained_path(root, expected)
            if ann.path is not None and Path(os.path.realpath(ann.path)) != real:
                raise UpdateRefused("outside_update_dir", f"announced path {ann.path!r} is not {expected}: this "
                                                          f"planner loads updates only from its update_dir {root}")
            for name in (MANIFEST_FILE, WEIGHTS_FILE):
                contained_path(root, real / name)
        except PathOutsideError as exc:
            raise UpdateRefused("outside_update_dir", str(exc)) from None
        return real

    def _verify(self, ann: Announcement, spare: Any = None) -> tuple[Any, int | None]:  # noqa: ANN401  (ModelSlot)
        """(the verified model's slot, the steps of robot data its manifest says it was finetuned on)."""
        from simdist_core.checkpoint import WEIGHTS_FILE, CheckpointRejected, ModelSlot, load_checkpoint, read_manifest
        from simdist_core.models.world_model import WorldModelConfig

        path = self._locate(ann)
        try:
            manifest = read_manifest(path)
        except CheckpointRejected as exc:
            raise UpdateRefused("invalid", exc.reason) from None
        if (manifest.version, manifest.weights_sha256, manifest.parts) != (ann.version, ann.weights_sha256, ann.parts):
            raise UpdateRefused("invalid", f"{path.name}/manifest.json does not carry the announced version and "
                                           "hashes the tag covers")
        # Config and size against the running model before anything is built from the manifest's own config.
        try:
            cfg = from_dict(WorldModelConfig, manifest.model_config)
        except (KeyError, ValueError, TypeError) as exc:
            raise UpdateRefused("config_mismatch", f"model_config is not a WorldModelConfig: {exc}") from None
        if manifest.robot != self.model.spec.name or cfg != self.model.cfg:
            raise UpdateRefused("config_mismatch", f"checkpoint robot {manifest.robot!r} or model config differs "
                                                   "from the running model's")
        if manifest.parts.get("encoder") != self._encoder_hash:
            raise UpdateRefused("frozen_part", "encoder weights differ from the running encoder (the encoder is "
                                               "frozen)")
        size = (path / WEIGHTS_FILE).stat().st_size if (path / WEIGHTS_FILE).is_file() else 0
        if size > self._max_weights_bytes:
            raise UpdateRefused("oversized", f"{WEIGHTS_FILE} is {size} bytes; a model of the running config needs "
                                             f"at most {self._max_weights_bytes}")
        try:  # verifies file and part hashes against this manifest, tensor names/shapes, finiteness
            model, _ = load_checkpoint(path, self._device, manifest=manifest, max_weights_bytes=self._max_weights_bytes,
                                       into=spare)
        except CheckpointRejected as exc:
            raise UpdateRefused("invalid", exc.reason) from None
        steps = finetuned_data_steps(manifest)
        if spare is not None:
            return spare, steps
        return ModelSlot(model.requires_grad_(False)), steps  # no spare free (a candidate is still waiting)
