"""Checkpoints: bit-identical round trip, atomic never-overwrite save, and refusal of bad files."""

import json

import pytest
import torch
from simdist_core.checkpoint import (
    CheckpointRejected,
    ModelSlot,
    load_checkpoint,
    save_checkpoint,
    verify_checkpoint,
)
from simdist_core.models import PART_NAMES, WorldModel, WorldModelConfig, freeze_except
from simdist_core.planning import planner_preset
from simdist_core.planning.bench import random_model_input
from simdist_core.robots import GO2, UR5E

from simdist_core import checkpoint as ckpt

SMALL = WorldModelConfig(latent_dim=16, width=16, heads=2, ffn=32, encoder_hidden=32, policy_layers=1)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """The CI machine has 2 shared cores: 2 intra-op threads contend with everything else running."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)



def _make_model(spec=GO2, seed=0):
    torch.manual_seed(seed)
    model = WorldModel(spec, SMALL)
    model.fit_normalizer(proprio=torch.randn(100, spec.proprio_dim) * 2, rewards=torch.rand(50), values=torch.rand(50))
    return model.eval()


def _outputs(model, spec):
    obs = random_model_input(spec, batch=2)
    with torch.no_grad():
        latent = model.encode(obs)
        actions = torch.rand(2, spec.horizon, spec.action_dim, generator=torch.Generator().manual_seed(0)) * 2 - 1
        zs = model.predict(latent, actions)
        rewards, values = model.reward(latent, zs, actions), model.value(latent, zs)
        return [latent.z, latent.context, zs, rewards, values, model.pi(latent)]


@pytest.fixture
def saved(tmp_path):
    model = _make_model()
    path = tmp_path / "v1"
    save_checkpoint(path, model, version=1, planner_config=planner_preset("cpu"), extra={"val_loss": 0.5})
    return model, path


@pytest.mark.parametrize("spec", [GO2, UR5E], ids=lambda s: s.name)
def test_round_trip_is_bit_identical(tmp_path, spec):
    model = _make_model(spec)
    manifest = save_checkpoint(tmp_path / "ck", model, version=3, parent_version=2, parts_changed=("dynamics",))
    loaded, loaded_manifest = load_checkpoint(tmp_path / "ck")
    assert loaded_manifest == manifest and not loaded.training
    assert (manifest.version, manifest.parent_version, manifest.parts_changed) == (3, 2, ("dynamics",))
    assert manifest.robot == spec.name and set(manifest.parts) == set(PART_NAMES)
    for a, b in zip(_outputs(model, spec), _outputs(loaded, spec), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(loaded.encoder.proprio_std, model.encoder.proprio_std)  # normalisers travel with it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no temp dir left behind


def test_never_overwrites(saved):
    model, path = saved
    before = (path / ckpt.WEIGHTS_FILE).read_bytes()
    with pytest.raises(FileExistsError, match="never overwritten"):
        save_checkpoint(path, _make_model(seed=1), version=2)
    assert (path / ckpt.WEIGHTS_FILE).read_bytes() == before


def test_dynamics_only_finetune_changes_only_the_dynamics_hash(saved, tmp_path):
    model, path = saved
    params = freeze_except(model, ("dynamics",))
    with torch.no_grad():
        for p in params:
            p.add_(0.01)
    m2 = save_checkpoint(tmp_path / "v2", model, version=2, parent_version=1, parts_changed=("dynamics",))
    m1 = verify_checkpoint(path)
    assert [n for n in PART_NAMES if m1.parts[n] != m2.parts[n]] == ["dynamics"]
    # Lineage: m2 descends from m1 by a dynamics-only finetune; not from another model, nor when more changed.
    assert ckpt.descends_from(m2, m1) and ckpt.descends_from(m1, m1)
    other = save_checkpoint(tmp_path / "other", _make_model(seed=1), version=1)
    assert not ckpt.descends_from(m2, other) and not ckpt.descends_from(other, m1)
    assert not ckpt.descends_from(m2, m1, trained=())
    assert ckpt.descends_from(other, m1, trained=tuple(PART_NAMES))  # all parts trainable: same config suffices
    bigger = save_checkpoint(tmp_path / "bigger", WorldModel(GO2, WorldModelConfig(latent_dim=32)), version=1)
    assert not ckpt.descends_from(bigger, m1, trained=tuple(PART_NAMES))


def _rewrite_manifest(path, **changes):
    data = json.loads((path / ckpt.MANIFEST_FILE).read_text())
    data.update(changes)
    (path / ckpt.MANIFEST_FILE).write_text(json.dumps(data))


def test_load_into_an_existing_model_writes_it_only_after_every_check(saved, tmp_path):
    model, path = saved
    spare = _make_model(seed=5)
    loaded, _ = load_checkpoint(path, into=ModelSlot(spare))
    assert loaded is spare
    for a, b in zip(_outputs(model, GO2), _outputs(spare, GO2), strict=True):
        assert torch.equal(a, b)

    other = _make_model(seed=6)
    untouched = {k: v.clone() for k, v in other.state_dict().items()}
    blob = bytearray((path / ckpt.WEIGHTS_FILE).read_bytes())
    blob[-5] ^= 0xFF  # a corrupt update: refused, and the model it would have been loaded into is unchanged
    (path / ckpt.WEIGHTS_FILE).write_bytes(bytes(blob))
    with pytest.raises(CheckpointRejected, match="sha256"):
        load_checkpoint(path, into=ModelSlot(other))
    assert all(torch.equal(v, untouched[k]) for k, v in other.state_dict().items())

    save_checkpoint(tmp_path / "ur5e", _make_model(UR5E), version=1)
    with pytest.raises(CheckpointRejected, match="differs from the model to load it into"):
        load_checkpoint(tmp_path / "ur5e", into=ModelSlot(other))


def test_flipped_byte_is_rejected(saved):
    _, path = saved
    blob = bytearray((path / ckpt.WEIGHTS_FILE).read_bytes())
    blob[-5] ^= 0xFF
    (path / ckpt.WEIGHTS_FILE).write_bytes(bytes(blob))
    with pytest.raises(CheckpointRejected, match="sha256"):
        load_checkpoint(path)


def test_truncated_file_is_rejected_even_with_a_matching_hash(saved):
    import hashlib

    _, path = saved
    blob = (path / ckpt.WEIGHTS_FILE).read_bytes()[:-100]
    (path / ckpt.WEIGHTS_FILE).write_bytes(blob)
    with pytest.raises(CheckpointRejected, match="sha256"):
        load_checkpoint(path)
    _rewrite_manifest(path, weights_sha256=hashlib.sha256(blob).hexdigest())
    with pytest.raises(CheckpointRejected, match="not a readable safetensors"):
        load_checkpoint(path)


def test_non_finite_weights_are_rejected(saved):
    import hashlib

    from safetensors.torch import load, save

    _, path = saved
    state = load((path / ckpt.WEIGHTS_FILE).read_bytes())
    state["dynamics.action_embed.weight"][0, 0] = float("nan")
    blob = save(state)
    (path / ckpt.WEIGHTS_FILE).write_bytes(blob)
    _rewrite_manifest(path, weights_sha256=hashlib.sha256(blob).hexdigest(), parts=ckpt.part_hashes(state))
    with pytest.raises(CheckpointRejected, match="'dynamics.action_embed.weight' contains NaN"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match="non-finite"):
        model = _make_model()
        with torch.no_grad():
            model.probe[0].weight[0, 0] = float("inf")
        save_checkpoint(path.parent / "bad", model, version=1)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"format_version": 99}, "format_version 99"),
        ({"robot": "spot"}, "unknown robot 'spot'"),
        ({"model_config": {**SMALL.__dict__, "latent_dim": 32, "loss": {}}}, "the config needs"),
        ({"model_config": {"latent_dim": 16, "colour": "red"}}, "unknown keys"),
        ({"parts": {"encoder": "0" * 64}}, "invalid field"),
        ({"version": "one"}, "invalid field"),
        ({"surprise": 1}, "schema"),
        ({"planner_config": {"num_elites": 10_000}}, "num_elites"),
    ],
)
def test_mismatched_or_incompatible_manifests_are_rejected(saved, changes, match):
    _, path = saved
    _rewrite_manifest(path, **changes)
    with pytest.raises(CheckpointRejected, match=match):
        load_checkpoint(path)


def test_tampered_part_hash_is_rejected(saved):
    _, path = saved
    parts = json.loads((path / ckpt.MANIFEST_FILE).read_text())["parts"]
    _rewrite_manifest(path, parts={**parts, "encoder": "0" * 64})
    with pytest.raises(CheckpointRejected, match=r"part sha256 mismatch for \['encoder'\]"):
        load_checkpoint(path)


def test_missing_or_garbled_files_are_rejected(saved, tmp_path):
    _, path = saved
    with pytest.raises(CheckpointRejected, match="not a checkpoint directory"):
        load_checkpoint(tmp_path / "nope")
    (path / ckpt.MANIFEST_FILE).write_text("{not json")
    with pytest.raises(CheckpointRejected, match="not valid JSON"):
        load_checkpoint(path)
    (path / ckpt.MANIFEST_FILE).unlink()
    with pytest.raises(CheckpointRejected, match="missing"):
        load_checkpoint(path)


def test_cli_verify_and_show(saved, capsys):
    _, path = saved
    assert ckpt.main(["verify", str(path)]) == 0
    assert "OK" in capsys.readouterr().out
    assert ckpt.main(["show", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["extra"] == {"val_loss": 0.5} and shown["planner_config"]["num_samples"] == 32
    (path / ckpt.WEIGHTS_FILE).write_bytes(b"garbage")
    assert ckpt.main(["verify", str(path)]) == 1
    assert "REJECTED" in capsys.readouterr().out
