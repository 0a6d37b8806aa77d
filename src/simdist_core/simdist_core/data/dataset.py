"""Reading the chunked step store: ``Dataset`` (format and writer in ``simdist_core.data.chunks``).

Rows of all sealed chunks are numbered globally in (shard name, chunk index) order. Within a
shard an episode is a maximal run of rows with the same ``episode_id`` (a shard without that
field is one long episode per run of consecutive chunks); an episode never continues across a
missing or skipped chunk. ``episode_starts`` / ``episode_ends`` give the episodes as global row
ranges, which is all the window sampler needs.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from simdist_core.data.chunks import (
    ChunkWriter,
    CorruptChunkError,
    FieldSpec,
    _check_structure,
    list_chunks,
    read_meta,
    verify_chunk,
)

__all__ = ["ChunkInfo", "ChunkWriter", "CorruptChunkError", "Dataset", "FieldSpec", "list_shards"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkInfo:
    """One sealed chunk as the dataset sees it."""

    path: Path
    shard: str
    index: int
    n_steps: int
    offset: int
    """Global row of the chunk's first step."""
    sha256: str
    """Chunk hash (hash of its field hashes)."""
    created_at_ns: int
    segment: int
    """Runs of consecutive chunks of one shard share a segment; episodes never cross segments."""


def list_shards(root: Path) -> list[Path]:
    """Shard folders of a dataset (``root`` itself when it holds chunks directly), sorted by name."""
    if list_chunks(root):
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("shard-")) if root.is_dir() else []


def is_dataset(root: Path) -> bool:
    """Whether ``root`` holds at least one sealed chunk (what :class:`Dataset` opens); cheap, reads no data."""
    return any(list_chunks(shard) for shard in list_shards(Path(root)))


def check_dataset(what: str, root: Path, robot: str | None = None) -> Path:
    """A dataset folder given on the command line: it exists, holds sealed chunks and (if it says) is of ``robot``.

    Raises:
        UsageError: naming the option, the path and what is wrong.
    """
    import json

    from simdist_core.cliargs import UsageError, check_existing_path

    check_existing_path(what, root)
    if not is_dataset(root):
        raise UsageError(f"{what} {str(root)!r} holds no dataset (no sealed chunks); make one with `simdist generate`")
    manifest = Path(root) / "dataset.json"
    if robot is not None and manifest.is_file():
        made_for = json.loads(manifest.read_text()).get("config", {}).get("robot")
        if made_for not in (None, robot):
            raise UsageError(f"{what} {str(root)!r} is a {made_for} dataset, not {robot}")
    return Path(root)


class Dataset:
    """All sealed chunks under a folder, memory-mapped.

    Args:
        path: dataset folder (shards below it) or a single shard folder.
        verify: ``"open"`` hashes every file now; ``"lazy"`` hashes a chunk the first time its
            arrays are read (a mismatch then always raises); ``"none"`` trusts the hashes. The
            cheap structural check (meta, files, sizes, .npy headers) always runs on open.
        on_corrupt: ``"raise"`` (default) or ``"skip"`` (log a warning and leave the chunk out).
        in_memory: copy every field into RAM once (fast random access for small datasets).

    Raises:
        FileNotFoundError: no sealed chunk under ``path``.
        CorruptChunkError: a bad chunk with ``on_corrupt="raise"``.
        ValueError: chunks disagree on fields (names, shapes or dtypes).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        verify: Literal["open", "lazy", "none"] = "open",
        on_corrupt: Literal["raise", "skip"] = "raise",
        in_memory: bool = False,
    ) -> None:
        if verify not in ("open", "lazy", "none") or on_corrupt not in ("raise", "skip"):
            raise ValueError(f"verify must be open|lazy|none and on_corrupt raise|skip, got {verify=}, {on_corrupt=}")
        self.path = Path(path)
        self.verify_mode = verify
        self.on_corrupt = on_corrupt
        self.skipped: list[CorruptChunkError] = []
        """Chunks left out because of ``on_corrupt="skip"``."""
        self.chunks: list[ChunkInfo] = []
        self.fields: dict[str, FieldSpec] = {}
        self._scan()
        if not self.chunks:
            raise FileNotFoundError(f"no sealed chunks under {self.path} (expected shard-*/chunk-*/meta.json)")
        self.n_steps = self.chunks[-1].offset + self.chunks[-1].n_steps
        self._offsets = np.array([c.offset for c in self.chunks], np.int64)
        self._arrays: list[dict[str, np.ndarray]] = [{} for _ in self.chunks]
        self._verified = [verify == "open" for _ in self.chunks]
        self._memory: dict[str, np.ndarray] | None = None
        self._index_episodes()
        if in_memory:
            self._memory = {name: self.array(name) for name in self.fields}

    # -- opening --------------------------------------------------------------------------------

    def _scan(self) -> None:
        offset, segment = 0, -1
        for shard in list_shards(self.path):
            previous = None
            for index, chunk in list_chunks(shard):
                try:
                    meta = read_meta(chunk)
                    verify_chunk(chunk, meta) if self.verify_mode == "open" else _check_structure(chunk, meta)
                    self._check_fields(chunk, meta)
                except CorruptChunkError as exc:
                    if self.on_corrupt == "raise":
                        raise
                    log.warning("skipping %s", exc)
                    self.skipped.append(exc)
                    continue
                if previous is None or index != previous + 1:
                    segment += 1
                previous = index
                info = ChunkInfo(chunk, shard.name, index, meta["n_steps"], offset, meta["chunk_sha256"],
                                 int(meta.get("created_at_ns", 0)), segment)
                self.chunks.append(info)
                offset += meta["n_steps"]

    def _check_fields(self, chunk: Path, meta: dict) -> None:
        fields = {k: FieldSpec(tuple(v["shape"]), v["dtype"]) for k, v in meta["fields"].items()}
        if not self.fields:
            self.fields = fields
        elif fields != self.fields:
            raise ValueError(f"{chunk} has fields {fields}, but earlier chunks have {self.fields}")

    def _index_episodes(self) -> None:
        has_ids = "episode_id" in self.fields
        starts: list[np.ndarray] = []
        last_id = None
        for ci, info in enumerate(self.chunks):
            new_segment = ci == 0 or self.chunks[ci - 1].segment != info.segment
            if has_ids:
                # Lazy mode hashes the chunk on first data access, not while indexing.
                ids = np.asarray(self._array(ci, "episode_id", check=False)).reshape(info.n_steps, -1)[:, 0]
                starts.append(info.offset + np.flatnonzero(ids[1:] != ids[:-1]) + 1)
                if new_segment or int(ids[0]) != last_id:
                    starts.append(np.array([info.offset]))
                last_id = int(ids[-1])
            elif new_segment:
                starts.append(np.array([info.offset]))
        self.episode_starts = np.unique(np.concatenate(starts)).astype(np.int64)
        """(E,) global row where each episode starts."""
        self.episode_ends = np.append(self.episode_starts[1:], self.n_steps).astype(np.int64)
        """(E,) global row one past each episode's last row."""
        self.row_episode = (np.searchsorted(self.episode_starts, np.arange(self.n_steps), side="right") - 1).astype(
            np.int64
        )
        """(N,) episode number of every global row."""

    # -- access ---------------------------------------------------------------------------------

    @property
    def num_episodes(self) -> int:
        """E: number of episodes."""
        return len(self.episode_starts)

    def _array(self, ci: int, field: str, check: bool = True) -> np.ndarray:
        arrays = self._arrays[ci]
        if check and not self._verified[ci] and self.verify_mode == "lazy":
            verify_chunk(self.chunks[ci].path)  # before any of this chunk's data is handed out
            self._verified[ci] = True
        if field not in arrays:
            arrays[field] = np.load(self.chunks[ci].path / f"{field}.npy", mmap_mode="r", allow_pickle=False)
        return arrays[field]

    def _require(self, field: str) -> FieldSpec:
        if field not in self.fields:
            raise KeyError(f"dataset {self.path} has no field {field!r}; fields: {sorted(self.fields)}")
        return self.fields[field]

    def gather(self, field: str, rows: np.ndarray) -> np.ndarray:
        """Values of ``field`` at global ``rows`` (any int array shape S) as a new (*S, *field_shape) array."""
        spec = self._require(field)
        rows = np.asarray(rows, np.int64)
        flat = rows.reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= self.n_steps):
            raise IndexError(f"rows out of range [0, {self.n_steps}) for field {field!r}")
        if self._memory is not None:
            return self._memory[field][flat].reshape(*rows.shape, *spec.shape)
        out = np.empty((flat.size, *spec.shape), np.dtype(spec.dtype))
        chunk_of = np.searchsorted(self._offsets, flat, side="right") - 1
        order = np.argsort(chunk_of, kind="stable")
        sorted_chunks = chunk_of[order]
        bounds = np.flatnonzero(np.diff(sorted_chunks)) + 1
        for sel in np.split(order, bounds):  # one fancy-index per chunk touched, not per element
            if sel.size:
                ci = int(chunk_of[sel[0]])
                out[sel] = self._array(ci, field)[flat[sel] - self._offsets[ci]]
        return out.reshape(*rows.shape, *spec.shape)

    def array(self, field: str) -> np.ndarray:
        """The whole field as one in-memory (N, *shape) array (copies; mind the size)."""
        self._require(field)
        if self._memory is not None:
            return self._memory[field]
        return np.concatenate([np.asarray(self._array(ci, field)) for ci in range(len(self.chunks))])

    def recent_rows(self, k_steps: int) -> np.ndarray:
        """Global rows of the newest ``k_steps`` steps (by chunk creation time, then row order)."""
        if k_steps < 1:
            raise ValueError(f"k_steps must be >= 1, got {k_steps=}")
        order = sorted(range(len(self.chunks)), key=lambda i: (self.chunks[i].created_at_ns, i), reverse=True)
        picked, left = [], k_steps
        for ci in order:
            info = self.chunks[ci]
            take = min(left, info.n_steps)
            picked.append(np.arange(info.offset + info.n_steps - take, info.offset + info.n_steps))
            left -= take
            if left == 0:
                break
        return np.sort(np.concatenate(picked))

    # -- integrity ------------------------------------------------------------------------------

    def verify(self) -> list[CorruptChunkError]:
        """Re-hash every chunk now; returns the problems found (empty list = all good)."""
        problems = []
        for ci, info in enumerate(self.chunks):
            try:
                verify_chunk(info.path)
                self._verified[ci] = True
            except CorruptChunkError as exc:
                problems.append(exc)
        return problems

    def checksum(self) -> str:
        """Dataset-level sha256 over (shard, chunk index, chunk hash) of every chunk, for provenance."""
        lines = "".join(f"{c.shard}/{c.index:06d}:{c.sha256}\n" for c in self.chunks)
        return hashlib.sha256(lines.encode()).hexdigest()

    @property
    def info(self) -> dict:
        """Contents of the dataset's ``dataset.json`` (generation provenance), or ``{}``."""
        path = self.path / "dataset.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def __len__(self) -> int:
        return self.n_steps

    def __repr__(self) -> str:
        n_chunks = len(self.chunks)
        return f"Dataset({str(self.path)!r}, steps={self.n_steps}, episodes={self.num_episodes}, chunks={n_chunks})"
