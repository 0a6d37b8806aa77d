"""`simdist security init`: the keystore's layout, certificates, signatures, XML structure and exact grants.

What runs here without DDS security plugins: everything about the files. Whether the keystore loads in a
DDS with the plugins is test_security_dds.py (skips here, runs in the Docker build).
"""

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest
from _security import installed_schemas, make_keystore, skip_or_fail
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from simdist_core.cli import main as simdist
from simdist_ros.access_policy import ROBOTS, graph_access
from simdist_ros.dds_security_xml import DdsGrant, reply_topic, request_topic, topic_name

ENCLAVE_FILES = ("cert.pem", "key.pem", "identity_ca.cert.pem", "permissions_ca.cert.pem", "governance.p7s",
                 "permissions.p7s", "permissions.xml")
# Child sequences of the OMG DDS-Security 1.1 schemas (omg_shared_ca_governance.xsd / _permissions.xsd),
# written as regular expressions over the child tags, each tag followed by one space: XML schema sequences
# are ordered.
GOVERNANCE_ORDER = {
    "dds": "domain_access_rules ",
    "domain_access_rules": "(domain_rule )+",
    "domain_rule": "domains allow_unauthenticated_participants enable_join_access_control "
                   "discovery_protection_kind liveliness_protection_kind rtps_protection_kind topic_access_rules ",
    "domains": "((id|id_range) )+",
    "topic_access_rules": "(topic_rule )+",
    "topic_rule": "topic_expression enable_discovery_protection enable_liveliness_protection "
                  "enable_read_access_control enable_write_access_control metadata_protection_kind "
                  "data_protection_kind ",
}
PERMISSIONS_ORDER = {
    "dds": "permissions ",
    "permissions": "(grant )+",
    "grant": "subject_name validity ((allow_rule|deny_rule) )+default ",
    "validity": "not_before not_after ",
    "allow_rule": "domains (publish )*(subscribe )*(relay )*",
    "deny_rule": "domains (publish )*(subscribe )*(relay )*",
    "domains": "((id|id_range) )+",
    "publish": "topics (partitions )?(data_tags )?",
    "subscribe": "topics (partitions )?(data_tags )?",
    "topics": "(topic )+",
}
PROTECTION = {"ENCRYPT_WITH_ORIGIN_AUTHENTICATION", "SIGN_WITH_ORIGIN_AUTHENTICATION", "ENCRYPT", "SIGN", "NONE"}
BASIC_PROTECTION = {"ENCRYPT", "SIGN", "NONE"}


@pytest.fixture(scope="module")
def keystores(tmp_path_factory):
    root = tmp_path_factory.mktemp("keystores")
    return {robot: make_keystore(root, robot) for robot in ROBOTS}


def _enclaves(keystore):
    return sorted(p.parent for p in (keystore / "enclaves").rglob("key.pem"))


def _check_order(element, order):
    """Assert every element's children follow ``order`` (tag -> regex over child tags); returns elements seen."""
    seen = 0
    for node in element.iter():
        if node.tag in order and len(node):
            tags = "".join(f"{child.tag} " for child in node)
            assert re.fullmatch(order[node.tag], tags), f"<{node.tag}> {tags.split()} break {order[node.tag]!r}"
            seen += 1
    return seen


def _governance_ok(root):
    assert root.tag == "dds"
    assert _check_order(root, GOVERNANCE_ORDER) >= 5
    rule = root.find("domain_access_rules/domain_rule")
    for tag in ("allow_unauthenticated_participants", "enable_join_access_control"):
        assert rule.findtext(tag) in ("true", "false")
    for tag in ("discovery_protection_kind", "liveliness_protection_kind", "rtps_protection_kind"):
        assert rule.findtext(tag) in PROTECTION
    for topic_rule in rule.iter("topic_rule"):
        assert topic_rule.findtext("metadata_protection_kind") in PROTECTION
        assert topic_rule.findtext("data_protection_kind") in BASIC_PROTECTION
    assert all(int(i.text) >= 0 for i in root.iter("id"))


def _permissions_ok(root):
    assert root.tag == "dds"
    assert _check_order(root, PERMISSIONS_ORDER) >= 6
    for grant in root.iter("grant"):
        assert grant.get("name")
        before, after = (datetime.fromisoformat(grant.findtext(f"validity/{t}")) for t in ("not_before", "not_after"))
        assert before < after
        assert grant.findtext("default") in ("ALLOW", "DENY")


def _granted(permissions_xml):
    root = ET.parse(permissions_xml).getroot()
    (grant,) = root.iter("grant")
    assert [r.tag for r in grant if r.tag.endswith("_rule")] == ["allow_rule"] and grant.findtext("default") == "DENY"
    return ({t.text for t in grant.iterfind("allow_rule/publish/topics/topic")},
            {t.text for t in grant.iterfind("allow_rule/subscribe/topics/topic")})


def test_ros_names_are_mangled_as_the_middleware_does():
    assert topic_name("/joint_command") == "rt/joint_command"
    assert request_topic("/reset_estop") == "rq/reset_estopRequest"
    assert reply_topic("/planner/get_parameters") == "rr/planner/get_parametersReply"
    from simdist_ros.access_policy import Access

    grant = DdsGrant.from_access(Access(serve=frozenset({"/s"}), call=frozenset({"/c"})))
    # A server reads requests and writes replies; a client the reverse.
    assert grant.publish == {"rr/sReply", "rq/cRequest", "ros_discovery_info"}
    assert grant.subscribe == {"rq/sRequest", "rr/cReply", "ros_discovery_info"}


@pytest.mark.parametrize("robot", ROBOTS)
def test_layout_and_file_modes(keystores, robot):
    ks = keystores[robot]
    assert (ks / "public" / "ca.cert.pem").is_file() and (ks / "private" / "ca.key.pem").is_file()
    for role in ("identity_ca", "permissions_ca"):
        assert (ks / "public" / f"{role}.cert.pem").resolve() == (ks / "public" / "ca.cert.pem").resolve()
        assert (ks / "private" / f"{role}.key.pem").resolve() == (ks / "private" / "ca.key.pem").resolve()
    assert (ks / "private").stat().st_mode & 0o077 == 0, "the CA key folder is owner-only"
    enclaves = _enclaves(ks)
    names = {"/" + str(p.relative_to(ks / "enclaves")) for p in enclaves}
    assert names == {f"/simdist/{node}" for node in graph_access(robot)}
    for folder in enclaves:
        assert sorted(p.name for p in folder.iterdir()) == sorted(ENCLAVE_FILES)
        assert (folder / "key.pem").stat().st_mode & 0o077 == 0, f"{folder}/key.pem is readable by others"
        assert (folder / "governance.p7s").read_bytes() == (ks / "enclaves" / "governance.p7s").read_bytes()


@pytest.mark.parametrize("robot", ROBOTS)
def test_identities_chain_to_the_ca_with_the_enclave_as_subject(keystores, robot):
    ks = keystores[robot]
    ca = x509.load_pem_x509_certificate((ks / "public" / "ca.cert.pem").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for folder in _enclaves(ks):
        cert = x509.load_pem_x509_certificate((folder / "cert.pem").read_bytes())
        cert.verify_directly_issued_by(ca)  # raises if the signature or issuer does not match
        enclave = "/" + str(folder.relative_to(ks / "enclaves"))
        assert cert.subject.rfc4514_string() == f"CN={enclave}"
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey) and cert.public_key().curve.name == "secp256r1"
        assert (folder / "identity_ca.cert.pem").read_bytes() == (ks / "public" / "ca.cert.pem").read_bytes()
    stranger = make_keystore(ks.parent / "other", robot)  # another CA: its identities must not chain to ours
    with pytest.raises(Exception):  # noqa: B017  (cryptography raises ValueError or InvalidSignature)
        x509.load_pem_x509_certificate((stranger / "enclaves/simdist/planner/cert.pem").read_bytes()) \
            .verify_directly_issued_by(ca)


def _smime_verify(p7s, ca, out):
    return subprocess.run(["openssl", "smime", "-verify", "-text", "-in", str(p7s), "-CAfile", str(ca),
                           "-out", str(out)], capture_output=True, check=False)


def test_signatures_verify_against_the_permissions_ca_and_cover_the_xml(keystores, tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command line tool to verify S/MIME signatures")
    ks = keystores["go2"]
    ca = ks / "public" / "permissions_ca.cert.pem"
    signed = [(ks / "enclaves" / "governance.p7s", ks / "enclaves" / "governance.xml")]
    signed += [(f / "permissions.p7s", f / "permissions.xml") for f in _enclaves(ks)]
    for p7s, xml in signed:
        result = _smime_verify(p7s, ca, tmp_path / "out.xml")
        assert result.returncode == 0, (p7s, result.stderr)
        assert (tmp_path / "out.xml").read_bytes().replace(b"\r\n", b"\n") == xml.read_bytes()
    # Control: one changed topic name in the signed text, and the signature no longer verifies.
    forged = tmp_path / "forged.p7s"
    forged.write_bytes((ks / "enclaves/simdist/encoder/permissions.p7s").read_bytes()
                       .replace(b"<topic>rt/latent</topic>", b"<topic>rt/joint_command</topic>", 1))
    assert forged.read_bytes() != (ks / "enclaves/simdist/encoder/permissions.p7s").read_bytes()
    assert _smime_verify(forged, ca, tmp_path / "x.xml").returncode != 0


@pytest.mark.parametrize("robot", ROBOTS)
def test_xml_follows_the_omg_schema_structure(keystores, robot):
    ks = keystores[robot]
    _governance_ok(ET.parse(ks / "enclaves" / "governance.xml").getroot())
    for folder in _enclaves(ks):
        _permissions_ok(ET.parse(folder / "permissions.xml").getroot())
    # Control: the checker fails on a document with two elements swapped.
    broken = ET.parse(ks / "enclaves" / "governance.xml").getroot()
    rule = broken.find("domain_access_rules/domain_rule")
    first, second = rule[1], rule[2]
    rule.remove(first)
    rule.insert(2, first)
    assert rule[1] is second
    with pytest.raises(AssertionError, match="break"):
        _governance_ok(broken)


def test_xml_validates_against_the_installed_omg_schemas(keystores):
    schemas = installed_schemas()
    if schemas is None:
        skip_or_fail("the OMG DDS-Security schemas are not installed here (a ROS 2 install ships them with sros2); "
                     "test_xml_follows_the_omg_schema_structure checks the structure instead")
    import xmlschema

    governance, permissions = (xmlschema.XMLSchema(str(p)) for p in schemas)
    for ks in keystores.values():
        governance.validate(str(ks / "enclaves" / "governance.xml"))
        for folder in _enclaves(ks):
            permissions.validate(str(folder / "permissions.xml"))


@pytest.mark.parametrize("robot", ROBOTS)
def test_each_enclave_is_granted_exactly_its_table_entry(keystores, robot):
    ks = keystores[robot]
    grants = graph_access(robot)
    for node, access in grants.items():
        publish, subscribe = _granted(ks / "enclaves" / "simdist" / node / "permissions.xml")
        expected = DdsGrant.from_access(access)
        assert publish == expected.publish and subscribe == expected.subscribe, node


@pytest.mark.parametrize("robot", ROBOTS)
def test_authority_over_the_robot_is_where_it_belongs(keystores, robot):
    ks = keystores[robot]
    granted = {f.name: _granted(f / "permissions.xml") for f in _enclaves(ks)}

    def writers(topic):
        return {node for node, (publish, _) in granted.items() if topic in publish}

    driver = f"{robot}_driver"
    assert writers("rt/joint_command") == {"planner"}
    assert writers("rt/model/update") == {"finetuner"}
    assert writers("rt/replay/chunk_ready") == {"replay_buffer"}
    assert writers("rt/latent") == {"encoder"}
    assert writers("rt/clock") == {"sim_robot"}
    assert writers("rt/estop") == {"operator"}
    services = {"go2": ("estop", "reset_estop", "stand_up", "lie_down"), "ur5e": ("estop", "reset_estop", "enable")}
    for service in services[robot]:
        assert writers(f"rq/{service}Request") == {"operator"}, service
        servers = {driver, "sim_robot"} if service in ("estop", "reset_estop") else {driver}
        assert writers(f"rr/{service}Reply") == servers, service
    # Nobody reads what it has no use for: the finetuner never sees commands, the planner never sees sensors.
    assert "rt/joint_command" not in granted["finetuner"][1] and "rt/joint_states" not in granted["planner"][1]


def test_real_mode_has_no_simulator_and_nobody_touches_the_clock(tmp_path):
    ks = make_keystore(tmp_path, "go2", mode="real")
    names = {f.name for f in _enclaves(ks)}
    assert "sim_robot" not in names and {"go2_driver", "height_map", "planner"} <= names
    for folder in _enclaves(ks):
        publish, subscribe = _granted(folder / "permissions.xml")
        assert "rt/clock" not in publish | subscribe, folder.name


def test_cli_creates_a_keystore_and_never_overwrites_one(tmp_path, capsys):
    path = tmp_path / "ks"
    assert simdist(["security", "init", "ur5e", "--keystore", str(path), "--domain-id", "7"]) == 0
    out = capsys.readouterr().out
    assert "/simdist/ur5e_driver" in out and "security:=true" in out
    assert all(i.text == "7" for i in ET.parse(path / "enclaves" / "governance.xml").getroot().iter("id"))
    before = (path / "public" / "ca.cert.pem").read_bytes()
    assert simdist(["security", "init", "ur5e", "--keystore", str(path)]) == 2
    assert "never overwritten" in capsys.readouterr().err
    assert (path / "public" / "ca.cert.pem").read_bytes() == before
    assert simdist(["security", "init", "ur5e", "--keystore", str(tmp_path / "x"), "--domain-id", "300"]) == 2
    assert "domain_id" in capsys.readouterr().err


def test_permissions_validity_matches_the_identity(keystores):
    folder = keystores["go2"] / "enclaves" / "simdist" / "planner"
    cert = x509.load_pem_x509_certificate((folder / "cert.pem").read_bytes())
    grant = ET.parse(folder / "permissions.xml").getroot().find("permissions/grant")
    assert grant.findtext("validity/not_before") == cert.not_valid_before_utc.strftime("%Y-%m-%dT%H:%M:%S")
    assert grant.findtext("validity/not_after") == cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%S")
    assert Path(folder / "permissions.xml").read_text().startswith('<?xml version="1.0" encoding="UTF-8"?>')
