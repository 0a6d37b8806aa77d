"""``simdist value relabel``: the same rows with value labels from another fitted expert value function.

Why: the value labels are a function of each row's privileged ``priv/value_features``
(``value_labels`` docstring), fitted once before generation. A better fit (more expert episodes, expert
continuations from the states weak policies reach) should not need the rollouts again: the new dataset
holds the same rows, each ``value`` recomputed as ``generate`` computes it (``V(features)``, 0 on the final
row of a terminated episode), every other field hard-linked (copied where links are impossible) from the
source, whose chunks are sealed and never modified. Each new chunk has its own ``meta.json`` with the new
field hash; ``dataset.json`` records the source and the new function, whose files are stored beside the
rows as ``generate`` stores its own. The result is written to a temporary folder and renamed into place.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from simdist_core.cliargs import ArgumentParser, check_existing_path, check_new_path, cli_main
from simdist_core.data.chunks import chunk_hash, fsync_path, read_meta, sha256_file
from simdist_core.data.dataset import Dataset, check_dataset
from simdist_core.data.value_labels import VALUE_FN_META, ValueFunction

log = logging.getLogger(__name__)

NEEDED = ("priv/value_features", "value", "terminated")
"""Fields a dataset must hold to be relabelled."""


def relabel_values(src: Path, dst: Path, value_fn: ValueFunction) -> dict:
    """Write ``dst``: ``src``'s rows with ``value`` from ``value_fn``; returns a summary (rows, label statistics).

    Raises:
        FileExistsError: ``dst`` exists.
        ValueError: ``src`` lacks a needed field, or its features do not fit ``value_fn``.
        CorruptChunkError: a source chunk fails its checksum (checked on open, before anything is written).
    """
    src, dst = Path(src), Path(dst)
    if dst.exists():
        raise FileExistsError(f"{dst} exists; relabelled data are written to a new folder")
    dataset = Dataset(src)  # every chunk's checksums verified here
    missing = [name for name in NEEDED if name not in dataset.fields]
    if missing:
        raise ValueError(f"{src} has no {missing}: only data from `simdist generate` can be relabelled")
    if dataset.fields["priv/value_features"].shape != (value_fn.feature_dim,):
        raise ValueError(f"{src} stores {dataset.fields['priv/value_features'].shape} value features per row, the "
                         f"value function reads ({value_fn.feature_dim},)")  # fmt: skip
    tmp = dst.parent / f".{dst.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    old_all, new_all = [], []
    try:
        for chunk in dataset.chunks:
            out = tmp / chunk.path.relative_to(src)
            old, new = _relabel_chunk(chunk.path, out, value_fn)
            old_all.append(old)
            new_all.append(new)
        value_fn.save(tmp)
        old_v, new_v = np.concatenate(old_all), np.concatenate(new_all)
        summary = {"rows": int(new_v.size), "old_mean": float(old_v.mean()), "old_std": float(old_v.std()),
                   "new_mean": float(new_v.mean()), "new_std": float(new_v.std()),
                   "correlation": float(np.corrcoef(old_v, new_v)[0, 1]) if old_v.std() and new_v.std() else None}
        info = dataset.info
        manifest = {**info, "value_fn_sha256": value_fn.meta.get("weights_sha256"),
                    "relabelled": {"from": str(src), "from_sha256": dataset.checksum(),
                                   "from_value_fn_sha256": info.get("value_fn_sha256"),
                                   "value_fn_fit": value_fn.meta.get("fit_r2"), "summary": summary,
                                   "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
        (tmp / "dataset.json").write_text(json.dumps(manifest, indent=1))
        fsync_path(tmp)
        os.rename(tmp, dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # Structure of every new chunk (meta, files, sizes, headers) as any reader checks it; the hashes need no second
    # pass: the source's were verified on open and the new labels' were computed from the bytes just written.
    Dataset(dst, verify="none")
    return summary


def _relabel_chunk(chunk: Path, out: Path, value_fn: ValueFunction) -> tuple[np.ndarray, np.ndarray]:
    """One chunk: link every field but ``value``, write the new labels and a new meta. Returns (old, new) labels."""
    meta = read_meta(chunk)
    out.mkdir(parents=True)
    for name in meta["fields"]:
        if name == "value":
            continue
        target = out / f"{name}.npy"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(chunk / f"{name}.npy", target)
        except OSError:  # another file system, or links not allowed
            shutil.copy2(chunk / f"{name}.npy", target)
    features = np.load(chunk / "priv/value_features.npy", allow_pickle=False)
    terminated = np.load(chunk / "terminated.npy", allow_pickle=False).astype(bool)
    old = np.load(chunk / "value.npy", allow_pickle=False)
    spec = meta["fields"]["value"]
    new = np.asarray(value_fn(features), dtype=np.dtype(spec["dtype"])).reshape(old.shape)
    new[terminated] = 0.0  # nothing follows a terminal state, as generate labels it
    if not np.isfinite(new).all():
        raise ValueError(f"the value function gave non-finite labels on {chunk}")
    with open(out / "value.npy", "wb") as f:
        np.save(f, new, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    fields = {**meta["fields"], "value": {**spec, "bytes": (out / "value.npy").stat().st_size,
                                          "sha256": sha256_file(out / "value.npy")}}  # fmt: skip
    new_meta = {**meta, "fields": fields, "chunk_sha256": chunk_hash(fields)}
    (out / "meta.json").write_text(json.dumps(new_meta, indent=1))
    return old.astype(np.float64), new.astype(np.float64)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist value relabel", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset from `simdist generate`")
    parser.add_argument("--value-fn", type=Path, required=True,
                        help=f"folder holding a fitted value function ({VALUE_FN_META} and its weights), e.g. the "
                             "dataset folder of another `simdist generate` run")  # fmt: skip
    parser.add_argument("--out", type=Path, required=True, help="new dataset folder (must not exist)")
    return parser.parse_args(argv)


@cli_main("simdist value relabel")
def main(argv: list[str]) -> int:
    """Entry point; 0 written, 2 bad input (nothing written)."""
    args = _parse(argv)
    check_dataset("--data", args.data)
    check_existing_path("--value-fn", args.value_fn, marker=VALUE_FN_META, kind="fitted value function")
    check_new_path("--out", args.out)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        value_fn = ValueFunction.load(args.value_fn)
        summary = relabel_values(args.data, args.out, value_fn)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:  # RuntimeError: CorruptChunkError
        print(f"simdist value relabel: cannot relabel {args.data}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {summary['rows']} rows; value labels mean {summary['old_mean']:.2f} "
          f"(std {summary['old_std']:.2f}) -> {summary['new_mean']:.2f} ({summary['new_std']:.2f}), "
          f"correlation {summary['correlation']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
