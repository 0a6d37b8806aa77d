"""Who may replace the running model: a shared key file, an HMAC tag per update, and where updates may live.

``model/update`` is a doorbell that anything on the DDS domain can ring: ROS 2 without SROS2 tells a
subscriber nothing about who published. So the planner trusts no path, version or hash it is sent. The
finetuner and the planner share a random key through a file only their user can read (the launcher creates
it, mode 0600). The finetuner tags each update with HMAC-SHA256 over (version, weights sha256, part hashes).
The planner recomputes the tag, loads only from its own update directory (:func:`contained_path`), and
accepts only a strictly newer version (:func:`is_newer_version`). No ROS here: the launcher, both nodes and
the tests share this module.

Not covered here: whoever can read the key file or write into the update directory runs as the robot's
user already. DDS-level authentication (SROS2) is a separate layer.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

KEY_BYTES = 32
"""Length of a generated key (256 bits, the HMAC-SHA256 block's natural key size)."""
TAG_DOMAIN = b"simdist/model-update/v1\n"
"""Prefix of every tagged message, so a tag made for something else can never pass as an update tag."""
_MAX_KEY_FILE_BYTES = 4096


class KeyFileError(ValueError):
    """The key file is missing, unsafe (symlink, other owner, group/world access) or malformed."""


class PathOutsideError(ValueError):
    """A path resolves (symlinks followed) outside the directory it must stay in."""


def create_key_file(path: str | Path) -> Path:
    """Create a random key file readable by its owner only, or check and reuse an existing one.

    The file is written beside its final name and hard-linked into place, so a reader never sees a
    partly written key, and an existing key is never replaced (nodes of a running graph may hold it).

    Args:
        path: where the key goes; missing parent folders are created (mode 0700).

    Returns:
        ``path``.

    Raises:
        KeyFileError: an existing file at ``path`` is unsafe or malformed (see :func:`read_key`).
    """
    path = Path(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.path.lexists(path):
        read_key(path)
        return path
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the umask can only clear bits; say the mode outright anyway
        os.write(fd, secrets.token_hex(KEY_BYTES).encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if another starter created the key first: then that one is used
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    read_key(path)
    return path


def read_key(path: str | Path) -> bytes:
    """The key in ``path``, after checking that only its owner (this user) can read or change it.

    Raises:
        KeyFileError: missing, a symlink, not a regular file, owned by another user, readable or
            writable by group or others, or not a hex key of at least ``KEY_BYTES`` bytes (the message
            names the file, what is wrong and the fix).
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise KeyFileError(f"model-update key file {path} does not exist; `simdist launch` creates it, "
                           "or create one with simdist_core.checkpoint_auth.create_key_file") from None
    except OSError as exc:  # ELOOP: a symlink could point at any file
        raise KeyFileError(f"model-update key file {path} cannot be opened without following links ({exc}); "
                           "use a regular file, not a symlink") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(f"model-update key file {path} is not a regular file")
        if info.st_uid != os.getuid():
            raise KeyFileError(f"model-update key file {path} is owned by uid {info.st_uid}, not by this user "
                               f"(uid {os.getuid()}); run the nodes as the user that created it")
        if info.st_mode & 0o077:
            raise KeyFileError(f"model-update key file {path} has mode {stat.S_IMODE(info.st_mode):04o}: group or "
                               f"others can access it; run `chmod 600 {path}` (or delete it to get a new key)")
        data = os.read(fd, _MAX_KEY_FILE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(data) > _MAX_KEY_FILE_BYTES or len(key) < KEY_BYTES:
        raise KeyFileError(f"model-update key file {path} does not hold a hex key of at least {KEY_BYTES} bytes; "
                           "delete it and let the launcher create a new one")
    return key


def _tag_message(version: int, weights_sha256: str, parts: Mapping[str, str]) -> bytes:
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"version must be an int, got {version!r}")
    if not isinstance(weights_sha256, str) or not all(isinstance(k, str) and isinstance(v, str)
                                                      for k, v in parts.items()):
        raise TypeError("weights_sha256 and the part hashes must be strings")
    body = {"parts": dict(sorted(parts.items())), "version": version, "weights_sha256": weights_sha256}
    return TAG_DOMAIN + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def update_tag(key: bytes, *, version: int, weights_sha256: str, parts: Mapping[str, str]) -> str:
    """HMAC-SHA256 (hex) of a model update: its version, weights file hash and per-part hashes.

    Raises:
        TypeError: a field of the wrong type (a bool or str version, non-string hashes).
    """
    return hmac.new(key, _tag_message(version, weights_sha256, parts), hashlib.sha256).hexdigest()


def verify_tag(key: bytes, tag: object, *, version: object, weights_sha256: object, parts: object) -> bool:
    """Whether ``tag`` is the update tag of these fields under ``key`` (constant-time comparison).

    Every argument but ``key`` may come straight from an untrusted message: wrong types give False.
    """
    if not isinstance(tag, str) or not isinstance(parts, Mapping):
        return False
    try:
        expected = update_tag(key, version=version, weights_sha256=weights_sha256, parts=parts)  # type: ignore[arg-type]
    except TypeError:
        return False
    return hmac.compare_digest(expected.encode("ascii"), tag.encode("utf-8", "replace"))


def contained_path(root: str | Path, candidate: str | Path) -> Path:
    """The real path of ``candidate`` (symlinks followed), which must lie inside the real path of ``root``.

    Raises:
        PathOutsideError: ``candidate`` escapes ``root`` (``..``, an absolute path, or a symlink out).
    """
    root_real = Path(os.path.realpath(root))
    real = Path(os.path.realpath(candidate))
    if not real.is_relative_to(root_real):
        raise PathOutsideError(f"{candidate} resolves to {real}, outside the update directory {root_real}")
    return real


def is_newer_version(candidate: object, current: int) -> bool:
    """True only for an int ``candidate`` strictly greater than ``current`` (equal = a replay; less = a rollback)."""
    return isinstance(candidate, int) and not isinstance(candidate, bool) and candidate > current


def version_dir_name(version: int) -> str:
    """The folder name of checkpoint ``version`` in an update directory (``v0007``): finetuner and planner agree."""
    return f"v{int(version):04d}"
