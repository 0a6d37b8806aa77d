"""Chunk format and writer of the step store (generation, ROS replay buffer, finetuning).

Layout on disk::

    DATASET/                      any folder; ``dataset.json`` (provenance) is optional
      shard-<seed>-<shard>/       one writer per shard (a generation worker, a replay-buffer node)
        chunk-000000/             sealed, never modified
          meta.json               n_steps, per-field shape/dtype/bytes/sha256, episode ids, created_at
          action.npy              one .npy per field, leading axis = step
          obs/proprio.npy         a field name with "/" is a sub-folder
          ...
        .tmp-chunk-000001-<pid>/  a chunk being written (ignored by readers, removed by the next writer)

A folder that holds ``chunk-*`` directly is read as a single shard.

Sealing (``ChunkWriter``): rows are buffered in memory and written as one chunk when the buffer
reaches ``chunk_steps`` rows. With ``align_episodes=True`` (used by ``simdist generate``) the
writer waits for the next ``end_episode()`` instead, so a sealed chunk holds only whole episodes
and a crashed generation resumes at an episode boundary. A chunk is written to a temp folder,
every file and folder is fsynced, then the folder is renamed into place: a crash loses at most
the open (unsealed) chunk, ``open_steps`` says how much that is at any moment.

Fields are defined by the first record a writer sees (or by the shard's last sealed chunk when a
writer reopens a shard); every later record must have the same keys and per-step shapes.

Reading (``Dataset``): every chunk's structure (meta, file present, size, .npy header) is checked
on open; checksums are verified on open (default), lazily on first access, or not at all. A bad
chunk raises ``CorruptChunkError`` naming the chunk, or with ``on_corrupt="skip"`` is left out
with a warning (an episode is then never joined across the hole). Arrays are memory-mapped
read-only with ``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

CHUNK_FORMAT = "simdist-chunk/1"
_CHUNK_RE = re.compile(r"^chunk-(\d{6,})$")
_FIELD_RE = re.compile(r"^[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*$")


class CorruptChunkError(RuntimeError):
    """A sealed chunk failed its structural or checksum check; it is never used silently."""

    def __init__(self, chunk: Path, reason: str) -> None:
        self.chunk = Path(chunk)
        self.reason = reason
        super().__init__(
            f"corrupt dataset chunk {self.chunk}: {reason}. Delete or regenerate this chunk, or open the "
            f"dataset with on_corrupt='skip' to leave it out."
        )


def fsync_path(path: Path) -> None:
    """Flush a file or folder to disk (a folder: its entries, so a rename into it survives a crash)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_file(path: Path, block_bytes: int = 1 << 22) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(block_bytes):
            digest.update(block)
    return digest.hexdigest()


def chunk_hash(fields: Mapping[str, Mapping[str, object]]) -> str:
    """A chunk's hash: sha256 over its fields' names and sha256s (``meta.json`` ``chunk_sha256``)."""
    lines = "".join(f"{name}:{fields[name]['sha256']}\n" for name in sorted(fields))
    return hashlib.sha256(lines.encode()).hexdigest()


def list_chunks(shard_dir: Path) -> list[tuple[int, Path]]:
    """Sealed chunk folders of a shard as (index, path), by index (temp folders ignored)."""
    if not shard_dir.is_dir():
        return []
    out = []
    for child in shard_dir.iterdir():
        match = _CHUNK_RE.match(child.name)
        if match and child.is_dir():
            out.append((int(match.group(1)), child))
    return sorted(out)


def read_meta(chunk: Path) -> dict:
    """Parse and sanity-check a chunk's ``meta.json``.

    Raises:
        CorruptChunkError: missing or unreadable meta.
    """
    try:
        meta = json.loads((chunk / "meta.json").read_text())
    except FileNotFoundError:
        raise CorruptChunkError(chunk, "meta.json is missing") from None
    except (OSError, ValueError) as exc:
        raise CorruptChunkError(chunk, f"meta.json is unreadable ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != CHUNK_FORMAT:
        raise CorruptChunkError(chunk, f"meta.json format is not {CHUNK_FORMAT!r}")
    if not isinstance(meta.get("fields"), dict) or not isinstance(meta.get("n_steps"), int):
        raise CorruptChunkError(chunk, "meta.json lacks 'fields' or 'n_steps'")
    if meta.get("chunk_sha256") != chunk_hash(meta["fields"]):
        raise CorruptChunkError(chunk, "meta.json chunk_sha256 does not match its field hashes (edited meta?)")
    return meta


@dataclass(frozen=True)
class FieldSpec:
    """Per-step layout of one stored field."""

    shape: tuple[int, ...]
    """Shape of one step's value (the file's shape is ``(n_steps, *shape)``)."""
    dtype: str
    """numpy dtype string, e.g. ``"<f4"``."""


def _check_structure(chunk: Path, meta: dict) -> None:
    """Files present, sizes and .npy headers as meta says (cheap; catches truncation)."""
    n = meta["n_steps"]
    for name, info in meta["fields"].items():
        path = chunk / f"{name}.npy"
        if not path.is_file():
            raise CorruptChunkError(chunk, f"field {name!r}: file {path.name} is missing")
        size = path.stat().st_size
        if size != info["bytes"]:
            raise CorruptChunkError(chunk, f"field {name!r}: {size} bytes on disk, meta says {info['bytes']}")
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise CorruptChunkError(chunk, f"field {name!r}: unreadable .npy ({exc})") from None
        expected = (n, *info["shape"])
        if arr.shape != expected or arr.dtype.str != info["dtype"]:
            raise CorruptChunkError(
                chunk, f"field {name!r}: array {arr.shape} {arr.dtype.str}, meta says {expected} {info['dtype']}"
            )


def verify_chunk(chunk: Path, meta: dict | None = None) -> dict:
    """Full check of one chunk: structure plus every file's sha256. Returns its meta.

    Raises:
        CorruptChunkError: naming the chunk and the first problem found.
    """
    meta = read_meta(chunk) if meta is None else meta
    _check_structure(chunk, meta)
    for name, info in meta["fields"].items():
        digest = sha256_file(chunk / f"{name}.npy")
        if digest != info["sha256"]:
            raise CorruptChunkError(chunk, f"field {name!r}: sha256 {digest[:12]}… != recorded {info['sha256'][:12]}…")
    return meta


class ChunkWriter:
    """Appends per-step records to one shard folder, sealing fixed-size chunks atomically.

    Args:
        shard_dir: the shard folder (created if needed). Existing sealed chunks are kept and the
            numbering continues after them; leftover temp folders from a crash are removed.
        chunk_steps: rows per chunk (with ``align_episodes``: minimum rows, sealed at the next
            episode end).
        align_episodes: seal only at ``end_episode()`` so chunks hold whole episodes.
        fsync: fsync files and folders before and after the rename (turn off only in tests).
    """

    def __init__(
        self, shard_dir: str | Path, *, chunk_steps: int = 4096, align_episodes: bool = False, fsync: bool = True
    ) -> None:
        if chunk_steps < 1:
            raise ValueError(f"chunk_steps must be >= 1, got {chunk_steps=}")
        self.shard_dir = Path(shard_dir)
        self.chunk_steps = chunk_steps
        self.align_episodes = align_episodes
        self.fsync = fsync
        self.shard_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.shard_dir.glob(".tmp-chunk-*"):
            log.warning("removing unsealed chunk %s left by a crashed writer", stale)
            shutil.rmtree(stale, ignore_errors=True)
        chunks = list_chunks(self.shard_dir)
        self.next_index = chunks[-1][0] + 1 if chunks else 0
        self.sealed_steps = 0
        self.schema: dict[str, FieldSpec] | None = None
        for _, chunk in chunks:
            meta = read_meta(chunk)
            self.sealed_steps += meta["n_steps"]
            self.schema = {k: FieldSpec(tuple(v["shape"]), v["dtype"]) for k, v in meta["fields"].items()}
        self._buf: dict[str, np.ndarray] = {}
        self._n = 0

    @property
    def open_steps(self) -> int:
        """Rows buffered in the open chunk (what a crash right now would lose)."""
        return self._n

    def _allocate(self, capacity: int) -> None:
        assert self.schema is not None
        new = {k: np.empty((capacity, *s.shape), np.dtype(s.dtype)) for k, s in self.schema.items()}
        for k, arr in self._buf.items():
            new[k][: self._n] = arr[: self._n]
        self._buf = new

    def append(self, record: Mapping[str, object]) -> None:
        """Buffer one step (a mapping field -> per-step value).

        Raises:
            ValueError: unknown/missing keys, a per-step shape or dtype kind that differs from the
                first record, a bad field name, or a non-finite float.
        """
        self.extend({key: np.asarray(value)[None] for key, value in record.items()})

    def _define_schema(self, columns: Mapping[str, np.ndarray]) -> None:
        self.schema = {}
        for key, arr in columns.items():
            if not _FIELD_RE.match(key):
                raise ValueError(f"field name {key!r} must be [A-Za-z0-9_] parts separated by '/'")
            if arr.dtype.kind not in "biuf":
                raise ValueError(f"field {key!r}: dtype {arr.dtype} is not bool/int/float")
            self.schema[key] = FieldSpec(arr.shape[1:], arr.dtype.str)

    def _check_block(self, columns: Mapping[str, np.ndarray]) -> int:
        assert self.schema is not None
        if columns.keys() != self.schema.keys():
            missing, extra = sorted(self.schema.keys() - columns.keys()), sorted(columns.keys() - self.schema.keys())
            raise ValueError(f"record fields differ from the shard's: missing {missing}, unexpected {extra}")
        n = len(next(iter(columns.values())))
        for key, spec in self.schema.items():
            arr = columns[key]
            if arr.shape != (n, *spec.shape):
                raise ValueError(f"field {key!r}: shape {arr.shape[1:]} per step (x{len(arr)}), expected {spec.shape} "
                                 f"x{n} (set by the first record)")
            if arr.dtype.str != spec.dtype and not np.can_cast(arr.dtype, spec.dtype, "same_kind"):
                raise ValueError(f"field {key!r}: dtype {arr.dtype} cannot be stored as {np.dtype(spec.dtype)}")
            if arr.dtype.kind == "f" and not np.isfinite(arr).all():
                raise ValueError(f"field {key!r}: non-finite value {arr.ravel()[~np.isfinite(arr.ravel())][:3]}")
        return n

    def extend(self, columns: Mapping[str, np.ndarray]) -> None:
        """Buffer a block of steps: field -> (n, *shape) array, all with the same n (validated as a whole).

        Raises:
            ValueError: as ``append``, or fields of different lengths.
        """
        columns = {key: np.asarray(value) for key, value in columns.items()}
        if self.schema is None:
            self._define_schema(columns)
        n = self._check_block(columns)
        start = 0
        while start < n:
            take = n - start if self.align_episodes else min(n - start, self.chunk_steps - self._n)
            capacity = len(next(iter(self._buf.values()))) if self._buf else 0
            if self._n + take > capacity:
                self._allocate(max(self.chunk_steps, 2 * capacity, self._n + take))
            for key, arr in columns.items():
                self._buf[key][self._n : self._n + take] = arr[start : start + take]
            self._n += take
            start += take
            if not self.align_episodes and self._n >= self.chunk_steps:
                self.seal()

    def end_episode(self) -> Path | None:
        """Mark an episode boundary; with ``align_episodes`` this seals once the chunk is full."""
        if self.align_episodes and self._n >= self.chunk_steps:
            return self.seal()
        return None

    def seal(self) -> Path | None:
        """Write the open rows as a sealed chunk now (no-op when empty). Returns its folder."""
        if self._n == 0:
            return None
        assert self.schema is not None
        name = f"chunk-{self.next_index:06d}"
        tmp = self.shard_dir / f".tmp-{name}-{os.getpid()}"
        tmp.mkdir()
        fields: dict[str, dict] = {}
        folders = {tmp}
        for key, spec in self.schema.items():
            path = tmp / f"{key}.npy"
            path.parent.mkdir(parents=True, exist_ok=True)
            folders.add(path.parent)
            with open(path, "wb") as f:
                np.lib.format.write_array(f, np.ascontiguousarray(self._buf[key][: self._n]), allow_pickle=False)
                f.flush()
                if self.fsync:
                    os.fsync(f.fileno())
            size, digest = path.stat().st_size, sha256_file(path)
            fields[key] = {"shape": list(spec.shape), "dtype": spec.dtype, "bytes": size, "sha256": digest}
        episode_ids = []
        if "episode_id" in self._buf:
            episode_ids = [int(e) for e in dict.fromkeys(self._buf["episode_id"][: self._n].ravel().tolist())]
        meta = {
            "format": CHUNK_FORMAT,
            "index": self.next_index,
            "n_steps": self._n,
            "fields": fields,
            "chunk_sha256": chunk_hash(fields),
            "episode_ids": episode_ids,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "created_at_ns": time.time_ns(),
        }
        with open(tmp / "meta.json", "w") as f:
            json.dump(meta, f, indent=1)
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())
        if self.fsync:
            for folder in sorted(folders, key=lambda p: -len(p.parts)):
                fsync_path(folder)
        final = self.shard_dir / name
        os.rename(tmp, final)
        if self.fsync:
            fsync_path(self.shard_dir)
        self.sealed_steps += self._n
        self.next_index += 1
        self._n = 0
        return final

    def close(self) -> Path | None:
        """Seal whatever is buffered (also a partial episode) and return the last chunk, if any."""
        return self.seal()

    def __enter__(self) -> ChunkWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # On an exception the open rows are dropped, as a crash would: they may end mid-episode and
        # a resumed generation must continue at the last sealed episode boundary.
        if exc_type is None:
            self.close()
        elif self._n:
            log.warning("dropping %d unsealed rows of %s after %s", self._n, self.shard_dir, exc_type.__name__)
