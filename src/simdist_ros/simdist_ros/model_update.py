"""The ``model/update`` message: what the finetuner publishes and what the planner accepts as well-formed.

The message is untrusted until its tag verifies (:mod:`simdist_core.checkpoint_auth`); the planner's
screening and verification are in :mod:`simdist_ros.model_swap`. JSON fields: ``version`` (int),
``sha256`` (the manifest's ``weights_sha256``), ``parts`` (sha256 per part), ``parts_changed``,
``tag`` (HMAC-SHA256 over version, sha256 and parts), ``path`` (informational), ``parent_version``
and unauthenticated extras (validation losses, provenance).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simdist_core.checkpoint_auth import update_tag

FROZEN_PARTS = ("encoder",)
"""Parts a live update may never change: the encoder node runs them and never reloads."""
REFUSAL_KINDS = ("disabled", "malformed", "unauthenticated", "not_newer", "frozen_part", "outside_update_dir",
                 "config_mismatch", "oversized", "invalid")
"""Why an update was refused; each kind has a ``refused_<kind>`` counter in the planner's diagnostics."""
MAX_ANNOUNCEMENT_CHARS = 65536
"""A real announcement is < 2 KB; longer text is refused before it is parsed."""


class UpdateRefused(ValueError):  # noqa: N818 (like CheckpointRejected: names the outcome)
    """A model update was refused; ``kind`` is one of :data:`REFUSAL_KINDS`, ``reason`` says why."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True, kw_only=True)
class Announcement:
    """A parsed model-update message (every field still untrusted until the tag verifies)."""

    version: int
    """Version of the new checkpoint; its folder is ``<update_dir>/v<version>``."""
    weights_sha256: str
    """The manifest's ``weights_sha256`` (JSON key ``sha256``)."""
    parts: dict[str, str]
    """sha256 per model part, as in the manifest."""
    parts_changed: tuple[str, ...]
    """Model parts whose weights differ from the parent."""
    tag: str
    """HMAC-SHA256 over (version, weights_sha256, parts) with the shared key."""
    path: str | None = None
    """Where the finetuner wrote it (informational; must be the planner's own ``<update_dir>/v<version>``)."""


def parse_announcement(text: str) -> Announcement:
    """Parse and type-check a model-update JSON string.

    Raises:
        UpdateRefused: kind ``malformed``: too long, not JSON, missing keys or wrong types (named in the message).
    """
    if not isinstance(text, str) or len(text) > MAX_ANNOUNCEMENT_CHARS:
        raise UpdateRefused("malformed", f"model update is longer than {MAX_ANNOUNCEMENT_CHARS} characters")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UpdateRefused("malformed", f"model update is not JSON ({exc}): {text[:200]!r}") from None
    if not isinstance(data, dict):
        raise UpdateRefused("malformed", f"model update must be a JSON object, got {type(data).__name__}")
    missing = [k for k in ("version", "sha256", "parts", "parts_changed", "tag") if k not in data]
    if missing:
        raise UpdateRefused("malformed", f"model update lacks {missing}; got keys {sorted(data)[:20]}")
    version, parts, changed = data["version"], data["parts"], data["parts_changed"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise UpdateRefused("malformed", f"version must be a non-negative integer, got {version!r}")
    if not isinstance(parts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in parts.items()):
        raise UpdateRefused("malformed", "parts must map part names to sha256 strings")
    if not isinstance(changed, list) or not all(isinstance(p, str) for p in changed):
        raise UpdateRefused("malformed", f"parts_changed must be a list of part names, got {changed!r}"[:300])
    path = data.get("path")
    if not isinstance(data["sha256"], str) or not isinstance(data["tag"], str) or not isinstance(path, str | None):
        raise UpdateRefused("malformed", "sha256, tag and path must be strings")
    return Announcement(version=version, weights_sha256=data["sha256"], parts=dict(parts),
                        parts_changed=tuple(changed), tag=data["tag"], path=path)


def make_announcement(manifest: Any, key: bytes, path: Path | str, parts_changed: list[str],  # noqa: ANN401
                      **extra: Any) -> str:  # noqa: ANN401  (JSON values)
    """The ``model/update`` JSON the finetuner publishes for a checkpoint it wrote, tagged with ``key``.

    Args:
        manifest: the checkpoint's ``Manifest`` as read back from disk.
        key: the key shared with the planner (``checkpoint_auth.read_key``).
        path: the checkpoint folder (informational for people and tools; the planner derives its own).
        parts_changed: parts whose hashes differ from the parent's.
        **extra: more JSON fields (validation losses, provenance); they are not authenticated.
    """
    tag = update_tag(key, version=int(manifest.version), weights_sha256=manifest.weights_sha256,
                     parts=manifest.parts)
    return json.dumps({**extra, "path": str(path), "version": int(manifest.version),
                       "parent_version": manifest.parent_version, "sha256": manifest.weights_sha256,
                       "parts": dict(manifest.parts), "parts_changed": list(parts_changed), "tag": tag})
