"""Model-update authentication without ROS: key files, HMAC tags, update-folder containment, version order.

Also the checkpoint loader's limits for untrusted input (weights size, manifest read once).
"""

import os
import stat

import pytest
import torch
from simdist_core.checkpoint import (
    CheckpointRejected,
    load_checkpoint,
    read_manifest,
    save_checkpoint,
    weights_size_limit,
)
from simdist_core.checkpoint_auth import (
    KEY_BYTES,
    KeyFileError,
    PathOutsideError,
    contained_path,
    create_key_file,
    is_newer_version,
    read_key,
    update_tag,
    verify_tag,
    version_dir_name,
)
from simdist_core.models import WorldModel, WorldModelConfig
from simdist_core.robots import GO2

SMALL = WorldModelConfig(latent_dim=16, width=16, heads=2, ffn=32, encoder_hidden=32, policy_layers=1)
PARTS = {"dynamics": "a" * 64, "encoder": "b" * 64}
FIELDS = {"version": 3, "weights_sha256": "c" * 64, "parts": PARTS}


def test_created_key_file_is_owner_only_and_reused(tmp_path):
    path = create_key_file(tmp_path / "run" / "launch" / "model_update.key")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = read_key(path)
    assert len(key) == KEY_BYTES
    assert create_key_file(path) == path and read_key(path) == key, "an existing safe key is reused, never replaced"
    assert [p.name for p in path.parent.iterdir()] == ["model_update.key"], "no temp file left behind"
    assert create_key_file(tmp_path / "other.key") and read_key(tmp_path / "other.key") != key, "keys are random"


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o602])
def test_key_readable_or_writable_by_others_is_refused(tmp_path, mode):
    path = create_key_file(tmp_path / "k.key")
    os.chmod(path, mode)
    with pytest.raises(KeyFileError, match=f"mode {mode:04o}.*chmod 600"):
        read_key(path)
    with pytest.raises(KeyFileError, match="chmod 600"):
        create_key_file(path)  # a starter refuses to hand an exposed key to the nodes


def test_symlinked_missing_and_malformed_key_files_are_refused(tmp_path):
    real = create_key_file(tmp_path / "real.key")
    (tmp_path / "link.key").symlink_to(real)
    with pytest.raises(KeyFileError, match="symlink"):
        read_key(tmp_path / "link.key")
    with pytest.raises(KeyFileError, match="does not exist"):
        read_key(tmp_path / "missing.key")
    for name, content in (("short.key", b"abcd\n"), ("text.key", b"not hex at all, not hex at all, not hex\n"),
                          ("big.key", b"ab" * 4000)):
        fd = os.open(tmp_path / name, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, content)
        os.close(fd)
        with pytest.raises(KeyFileError, match="hex key"):
            read_key(tmp_path / name)


def test_tag_verifies_only_the_exact_fields_under_the_same_key():
    key, other = bytes(range(32)), bytes(range(1, 33))
    tag = update_tag(key, **FIELDS)
    assert len(tag) == 64 and verify_tag(key, tag, **FIELDS)
    assert update_tag(key, **{**FIELDS, "parts": dict(reversed(PARTS.items()))}) == tag, "part order is irrelevant"
    assert not verify_tag(other, tag, **FIELDS), "another key"
    assert not verify_tag(key, tag, **{**FIELDS, "version": 4}), "another version (a replay under a new number)"
    assert not verify_tag(key, tag, **{**FIELDS, "weights_sha256": "d" * 64}), "other weights"
    assert not verify_tag(key, tag, **{**FIELDS, "parts": {**PARTS, "dynamics": "e" * 64}}), "another part"
    assert not verify_tag(key, tag.upper(), **FIELDS) and not verify_tag(key, tag[:-1], **FIELDS)
    # Untrusted message fields of the wrong type are a failed check, never an exception.
    for bad in ({"tag": None}, {"tag": "é" * 64}, {"version": "3"}, {"version": True}, {"parts": ["dynamics"]},
                {"weights_sha256": 7}, {"parts": {"dynamics": 1}}):
        args = {"tag": tag, **FIELDS, **bad}
        assert not verify_tag(key, args.pop("tag"), **args), bad
    with pytest.raises(TypeError, match="version must be an int"):
        update_tag(key, **{**FIELDS, "version": 3.0})


def test_contained_path_refuses_escapes_and_symlinks_out(tmp_path):
    root = tmp_path / "updates"
    (root / "v0001").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert contained_path(root, root / "v0001") == (root / "v0001").resolve()
    (root / "v0002").symlink_to(root / "v0001")  # a link that stays inside is fine
    assert contained_path(root, root / "v0002") == (root / "v0001").resolve()
    (root / "v0003").symlink_to(outside)
    for escape in (root / "v0003", root / ".." / "elsewhere", outside, "/etc"):
        with pytest.raises(PathOutsideError, match="outside the update directory"):
            contained_path(root, escape)
    with pytest.raises(PathOutsideError):  # a sibling whose name starts like the root is still outside
        contained_path(root, tmp_path / "updates-evil")


def test_version_order_is_strict_and_typed():
    assert is_newer_version(4, 3)
    assert not is_newer_version(3, 3), "the same version again is a replay"
    assert not is_newer_version(2, 3), "an older version is a rollback"
    assert not any(is_newer_version(v, 3) for v in ("4", 4.0, True, None))
    assert version_dir_name(7) == "v0007" and version_dir_name(12345) == "v12345"


def _model(seed=0):
    torch.manual_seed(seed)
    return WorldModel(GO2, SMALL)


def test_weights_over_the_size_limit_are_refused_before_they_are_read(tmp_path):
    model = _model()
    save_checkpoint(tmp_path / "ok", model, version=1)
    limit = weights_size_limit(model)
    assert (tmp_path / "ok" / "model.safetensors").stat().st_size <= limit
    manifest = read_manifest(tmp_path / "ok")
    loaded, got = load_checkpoint(tmp_path / "ok", manifest=manifest, max_weights_bytes=limit)
    assert got is manifest
    weights = tmp_path / "ok" / "model.safetensors"
    with weights.open("ab") as f:
        f.truncate(limit + 1)  # sparse: the refusal must come from the size, not from reading it
    with pytest.raises(CheckpointRejected, match=f"more than the {limit}"):
        load_checkpoint(tmp_path / "ok", max_weights_bytes=limit)


def test_load_verifies_weights_against_the_manifest_it_is_given(tmp_path):
    """The planner checks a manifest, then loads with that same object: the file is not read a second time."""
    save_checkpoint(tmp_path / "a", _model(0), version=1)
    save_checkpoint(tmp_path / "b", _model(1), version=1)
    with pytest.raises(CheckpointRejected, match="sha256"):
        load_checkpoint(tmp_path / "b", manifest=read_manifest(tmp_path / "a"))
