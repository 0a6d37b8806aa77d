"""Versioned world-model checkpoints: ``NAME/model.safetensors`` + ``NAME/manifest.json``.

Saving is atomic (temp dir beside the target, fsync files and dir, rename) and never overwrites.
Loading verifies everything before a model is built: manifest schema and format version, the
weights file's sha256, every tensor's name/shape/dtype against the config, finiteness, and a
sha256 per part (so a planner can check that a dynamics-only update left the encoder untouched).
A caller facing untrusted input reads the manifest first (``read_manifest``: size-limited, builds
nothing), checks it, then loads with that manifest and a weights size limit (``weights_size_limit``).
Nothing is unpickled: weights are safetensors, metadata is JSON.

CLI: ``simdist checkpoint verify PATH`` / ``simdist checkpoint show PATH``.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from simdist_core.cliargs import (
    ArgumentParser,
    UsageError,
    check_existing_path,
    check_list,
    check_new_path,
    checkpoint_dir,
    cli_main,
)
from simdist_core.config import from_dict, to_dict
from simdist_core.models.world_model import PART_NAMES, WorldModel, WorldModelConfig
from simdist_core.planning.mppi import PlannerConfig
from simdist_core.robots import get_robot

FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
MANIFEST_FILE = "manifest.json"
_MAX_MANIFEST_BYTES = 1 << 20


class CheckpointRejected(Exception):  # noqa: N818 (the name the project's contract uses)
    """A checkpoint failed verification; the running model should be kept."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"checkpoint rejected: {reason} (keep the current model; re-export or re-save the checkpoint)")
        self.reason = reason


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """What ``manifest.json`` holds."""

    format_version: int
    """Layout version of the checkpoint directory (``FORMAT_VERSION``)."""
    robot: str
    """``RobotSpec.name`` the model was built for."""
    model_config: dict[str, Any]
    """``to_dict(WorldModelConfig)``."""
    parts: dict[str, str]
    """sha256 of each part's tensors (names, dtypes, shapes, bytes)."""
    weights_sha256: str
    """sha256 of ``model.safetensors``."""
    version: int
    """Monotonic model version."""
    parent_version: int | None = None
    """Version this one was finetuned from."""
    parts_changed: tuple[str, ...] = PART_NAMES
    """Parts whose weights differ from the parent."""
    planner_config: dict[str, Any] | None = None
    """``to_dict(PlannerConfig)`` to deploy with, if any."""
    created_at: str = ""
    """ISO-8601 UTC time of saving."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form metrics and provenance (JSON)."""

    def to_json(self) -> str:
        """The manifest as indented JSON."""
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)


def part_hashes(state: dict[str, torch.Tensor]) -> dict[str, str]:
    """sha256 per part of a state dict (keys ``<part>.<name>``); raises ValueError for keys outside the parts."""
    digests = {name: hashlib.sha256() for name in PART_NAMES}
    for key in sorted(state):
        part = key.split(".", 1)[0]
        if part not in digests:
            raise ValueError(f"state key {key!r} belongs to no part; parts: {list(PART_NAMES)}")
        tensor = state[key].detach().to("cpu").contiguous()
        header = f"{key}|{tensor.dtype}|{tuple(tensor.shape)}|".encode()
        digests[part].update(header)
        digests[part].update(tensor.view(-1).view(torch.uint8).numpy())  # the buffer itself, no copy
    return {name: digest.hexdigest() for name, digest in digests.items()}


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(
    path: str | Path,
    model: WorldModel,
    *,
    version: int,
    parent_version: int | None = None,
    parts_changed: tuple[str, ...] = PART_NAMES,
    planner_config: PlannerConfig | None = None,
    extra: dict[str, Any] | None = None,
) -> Manifest:
    """Write ``model`` as the checkpoint directory ``path`` atomically.

    Raises:
        FileExistsError: ``path`` already exists (checkpoints are never overwritten).
        ValueError: unknown part names, or non-finite weights.
    """
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"checkpoint {path} already exists; checkpoints are never overwritten, pick a new name")
    unknown = set(parts_changed) - set(PART_NAMES)
    if unknown:
        raise ValueError(f"parts_changed has unknown parts {sorted(unknown)}; valid: {list(PART_NAMES)}")
    state = {k: v.detach().to("cpu").contiguous().clone() for k, v in model.state_dict().items()}
    bad = [k for k, v in state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
    if bad:
        raise ValueError(f"refusing to save non-finite weights in {bad[:5]}")
    blob = save_safetensors(state, metadata={"format": "pt"})
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        robot=model.spec.name,
        model_config=to_dict(model.cfg),
        parts=part_hashes(state),
        weights_sha256=hashlib.sha256(blob).hexdigest(),
        version=int(version),
        parent_version=parent_version,
        parts_changed=tuple(parts_changed),
        planner_config=to_dict(planner_config) if planner_config is not None else None,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        extra=json.loads(json.dumps(extra or {})),  # fails early on non-JSON extras
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        for name, data in ((WEIGHTS_FILE, blob), (MANIFEST_FILE, manifest.to_json().encode())):
            with open(tmp / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        _fsync_path(tmp)
        if path.exists():  # lost a race with another writer
            raise FileExistsError(f"checkpoint {path} appeared while saving; not overwriting it")
        os.rename(tmp, path)
        _fsync_path(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def read_manifest(path: str | Path) -> Manifest:
    """Read and schema-check ``path/manifest.json`` (at most 1 MiB); no weights are read, nothing is built.

    Raises:
        CheckpointRejected: missing, too large, not JSON, wrong format version or schema.
    """
    path = Path(path)
    file = path / MANIFEST_FILE
    if not path.is_dir():
        raise CheckpointRejected(f"{path} is not a checkpoint directory")
    if not file.is_file():
        raise CheckpointRejected(f"{file} is missing")
    with open(file, "rb") as f:
        raw = f.read(_MAX_MANIFEST_BYTES + 1)  # never more than the limit, whatever the file's size
    if len(raw) > _MAX_MANIFEST_BYTES:
        raise CheckpointRejected(f"{file} is larger than {_MAX_MANIFEST_BYTES} bytes")
    try:
        data = json.loads(raw.decode())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointRejected(f"{file} is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise CheckpointRejected(f"{file} must hold a JSON object, got {type(data).__name__}")
    if data.get("format_version") != FORMAT_VERSION:
        raise CheckpointRejected(
            f"format_version {data.get('format_version')!r} is not supported (this build reads {FORMAT_VERSION})"
        )
    try:
        manifest = Manifest(**{**data, "parts_changed": tuple(data.get("parts_changed", PART_NAMES))})
    except TypeError as e:
        raise CheckpointRejected(f"{file} does not match the manifest schema: {e}") from None
    checks = {
        "robot": isinstance(manifest.robot, str),
        "model_config": isinstance(manifest.model_config, dict),
        "parts": isinstance(manifest.parts, dict) and set(manifest.parts) == set(PART_NAMES),
        "weights_sha256": isinstance(manifest.weights_sha256, str),
        "version": isinstance(manifest.version, int) and not isinstance(manifest.version, bool),
        "parent_version": manifest.parent_version is None or isinstance(manifest.parent_version, int),
        "parts_changed": set(manifest.parts_changed) <= set(PART_NAMES),
    }
    bad = [name for name, ok in checks.items() if not ok]
    if bad:
        raise CheckpointRejected(f"{file}: invalid field(s) {bad}")
    return manifest


def _read_weights(file: Path, max_bytes: int | None) -> bytes:
    """The weights file's bytes; with a limit, its size is checked before reading and never more is read."""
    with open(file, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if max_bytes is None:
            return f.read()
        if size > max_bytes:
            raise CheckpointRejected(f"{file} is {size} bytes, more than the {max_bytes} this model config needs")
        blob = f.read(max_bytes + 1)  # the file may grow after the stat: read at most one byte past the limit
    if len(blob) > max_bytes:
        raise CheckpointRejected(f"{file} grew past {max_bytes} bytes while it was read")
    return blob


def weights_size_limit(model: WorldModel, header_bytes: int = 1 << 20) -> int:
    """Largest weights file a checkpoint of ``model``'s config can need: its tensor bytes plus a header allowance.

    A checkpoint of the same config has the same tensors, so anything much larger is not a model of it.
    """
    tensors = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    return int(tensors + header_bytes)


def _check_tensors(state: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        raise CheckpointRejected(
            f"tensor names differ from the config: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    for key, ref in expected.items():
        got = state[key]
        if got.shape != ref.shape or got.dtype != ref.dtype:
            raise CheckpointRejected(
                f"tensor {key!r} is {got.dtype} {tuple(got.shape)}, the config needs {ref.dtype} {tuple(ref.shape)}"
            )
    # One finiteness check over all weights (one op instead of ~200); the tensor is named only on failure.
    floats = [state[key].reshape(-1) for key in expected if state[key].is_floating_point()]
    if floats and not torch.isfinite(torch.cat(floats)).all():
        bad = next(k for k in expected if state[k].is_floating_point() and not torch.isfinite(state[k]).all())
        raise CheckpointRejected(f"tensor {bad!r} contains NaN or inf")


class ModelSlot:
    """A built model that checkpoints load into in place (``load_checkpoint(into=slot)``).

    Its state tensors (parameters and buffers, sharing storage with the model) are looked up once, here:
    building a model and walking its module tree for ``state_dict``/``load_state_dict`` is most of a load's
    Python work (1,500 modules for the Go2 model), which a hot swap would otherwise do beside the control tick.
    The model must stay where it was built (no ``.to`` to another device afterwards).
    """

    def __init__(self, model: WorldModel) -> None:
        self.model = model
        self.tensors = model.state_dict()

    def write(self, state: dict[str, torch.Tensor]) -> None:
        """Copy a checked state (same names, shapes and dtypes) into the model's own tensors."""
        with torch.no_grad():
            for key, dst in self.tensors.items():
                dst.copy_(state[key])


def load_checkpoint(
    path: str | Path,
    device: torch.device | str = "cpu",
    *,
    manifest: Manifest | None = None,
    max_weights_bytes: int | None = None,
    into: ModelSlot | None = None,
) -> tuple[WorldModel, Manifest]:
    """Verify and load a checkpoint directory; the model is returned in eval mode on ``device``.

    Args:
        path: the checkpoint directory.
        device: where the model goes.
        manifest: the manifest already read (and checked by the caller) with :func:`read_manifest`; the
            weights are verified against this one, so what the caller checked is what gets loaded.
        max_weights_bytes: refuse a weights file larger than this before reading it (see
            :func:`weights_size_limit`); None = no limit (trusted local files only).
        into: a built model of the same robot and config to load the weights into instead of building one
            (written only after every check passed; it stays on its own device, ``device`` is not applied).

    Raises:
        CheckpointRejected: missing, oversized, corrupt, truncated, mismatched or incompatible checkpoint.
    """
    path = Path(path)
    manifest = read_manifest(path) if manifest is None else manifest
    try:
        spec = get_robot(manifest.robot)
        cfg = from_dict(WorldModelConfig, manifest.model_config)
        if manifest.planner_config is not None:
            from_dict(PlannerConfig, manifest.planner_config)
    except (KeyError, ValueError, TypeError) as e:
        raise CheckpointRejected(f"incompatible manifest: {e}") from None
    weights = path / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointRejected(f"{weights} is missing")
    blob = _read_weights(weights, max_weights_bytes)
    digest = hashlib.sha256(blob).hexdigest()
    if digest != manifest.weights_sha256:
        raise CheckpointRejected(f"{weights} sha256 {digest[:12]}… != manifest {manifest.weights_sha256[:12]}…")
    try:
        state = load_safetensors(blob)
    except SafetensorError as e:
        raise CheckpointRejected(f"{weights} is not a readable safetensors file ({type(e).__name__}: {e})") from None
    if into is not None and (into.model.spec.name != spec.name or into.model.cfg != cfg):
        raise CheckpointRejected(f"checkpoint robot {manifest.robot!r} or model config differs from the model "
                                 "to load it into")
    slot = ModelSlot(WorldModel(spec, cfg)) if into is None else into
    _check_tensors(state, slot.tensors)  # the same names, shapes and dtypes: ``write`` fills every tensor
    hashes = part_hashes(state)
    changed = [name for name in PART_NAMES if hashes[name] != manifest.parts[name]]
    if changed:
        raise CheckpointRejected(f"part sha256 mismatch for {changed}")
    slot.write(state)
    return (slot.model if into is not None else slot.model.to(device).eval()), manifest


def descends_from(child: Manifest, root: Manifest, trained: tuple[str, ...] = ("dynamics",)) -> bool:
    """True when ``child`` can be ``root`` finetuned in ``trained`` parts only.

    Same robot and model config, and every other part bit-identical (part hashes). A finetuner resuming
    from its output folder uses this to refuse checkpoints left there by another model.
    """
    if child.robot != root.robot or child.model_config != root.model_config or set(child.parts) != set(root.parts):
        return False
    return all(child.parts[name] == digest for name, digest in root.parts.items() if name not in trained)


def verify_checkpoint(path: str | Path) -> Manifest:
    """Full verification (as ``load_checkpoint``, on CPU); safe to run off the control thread.

    Raises:
        CheckpointRejected: see ``load_checkpoint``.
    """
    return load_checkpoint(path, "cpu")[1]


def load_for_cli(what: str, path: Path, device: torch.device | str = "cpu") -> tuple[WorldModel, Manifest]:
    """:func:`load_checkpoint` of a path given on the command line: a rejection is a one-line usage error.

    Raises:
        UsageError: the path is not a checkpoint, or the checkpoint is rejected (the reason is named).
    """
    checkpoint_dir(what, Path(path))
    try:
        return load_checkpoint(path, device)
    except CheckpointRejected as exc:
        raise UsageError(f"{what} {str(path)!r} is rejected: {exc.reason}") from None


@cli_main("simdist checkpoint")
def main(argv: list[str]) -> int:
    """``simdist checkpoint verify PATH`` (exit 1 if rejected) or ``simdist checkpoint show PATH``.

    A PATH that does not exist is bad input (exit 2); one that exists but fails verification is the
    answer to ``verify`` (exit 1).
    """
    parser = ArgumentParser(prog="simdist checkpoint", description="inspect / verify a checkpoint")
    parser.add_argument("action", choices=("verify", "show"), help="verify: check hashes and shapes; show: manifest")
    parser.add_argument("path", type=Path, help="checkpoint directory")
    args = parser.parse_args(argv)
    check_existing_path("PATH", args.path)
    try:
        manifest = verify_checkpoint(args.path)
    except CheckpointRejected as e:
        print(f"REJECTED {args.path}: {e.reason}")
        return 1
    if args.action == "show":
        print(manifest.to_json())
    else:
        print(f"OK {args.path}: robot {manifest.robot}, version {manifest.version}, sha256 {manifest.weights_sha256}")
    return 0


def graft_parts(donor: WorldModel, recipient: WorldModel, parts: tuple[str, ...]) -> WorldModel:
    """``recipient`` with the weights of ``parts`` taken from ``donor`` (both unchanged; returns a new model).

    Why: a head retrained in simulation (``simdist finetune --parts value`` on relabelled data) is frozen on
    the robot like any other, so a model whose dynamics were adapted on the robot can take the new head as it
    is, without training anything again.

    Raises:
        ValueError: an unknown part, or models of different robots or configs.
    """
    unknown = set(parts) - set(PART_NAMES)
    if not parts or unknown:
        raise ValueError(f"parts must be a non-empty subset of {list(PART_NAMES)}, got {list(parts)}")
    if donor.spec.name != recipient.spec.name or to_dict(donor.cfg) != to_dict(recipient.cfg):
        raise ValueError("the two checkpoints are of different robots or model configs: parts do not carry over")
    out = copy.deepcopy(recipient)
    state = out.state_dict()
    state.update({k: v for k, v in donor.state_dict().items() if k.split(".", 1)[0] in parts})
    out.load_state_dict(state)
    return out


@cli_main("simdist checkpoint graft")
def graft_main(argv: list[str]) -> int:
    """``simdist checkpoint graft --from A --parts value --into B --out C``: C is B with A's named parts.

    Exit 0 written, 2 bad input (nothing written).
    """
    parser = ArgumentParser(prog="simdist checkpoint graft", description="copy named parts of one checkpoint into "
                            "another, written as a new version of the recipient")  # fmt: skip
    parser.add_argument("--from", dest="donor", type=Path, required=True, help="checkpoint that gives the parts")
    parser.add_argument("--parts", required=True, help=f"comma list of parts ({', '.join(PART_NAMES)})")
    parser.add_argument("--into", type=Path, required=True, help="checkpoint that receives them")
    parser.add_argument("--out", type=Path, required=True, help="new checkpoint directory (must not exist)")
    args = parser.parse_args(argv)
    parts = tuple(check_list("--parts", args.parts, PART_NAMES))
    check_new_path("--out", args.out)
    donor, donor_manifest = load_for_cli("--from", args.donor)
    recipient, manifest = load_for_cli("--into", args.into)
    try:
        model = graft_parts(donor, recipient, parts)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    planner = None if manifest.planner_config is None else from_dict(PlannerConfig, manifest.planner_config)
    graft = {"from": str(args.donor), "from_sha256": donor_manifest.weights_sha256,
             "from_version": donor_manifest.version, "parts": list(parts)}  # fmt: skip
    new = save_checkpoint(args.out, model, version=manifest.version + 1, parent_version=manifest.version,
                          parts_changed=tuple(p for p in PART_NAMES if p in parts), planner_config=planner,
                          extra={**manifest.extra, "kind": "grafted", "graft": graft})  # fmt: skip
    print(f"wrote {args.out} (version {new.version}): {', '.join(parts)} from {args.donor}, the rest from {args.into}")
    return 0
