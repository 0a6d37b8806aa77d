"""``simdist security init <robot>``: a DDS-Security keystore for the robot's graph, in the SROS2 layout.

Layout (what ``ROS_SECURITY_KEYSTORE`` points at; rcl looks up ``enclaves/<enclave>/``)::

    public/ca.cert.pem                     the one CA (self-signed, ECDSA P-256)
    public/identity_ca.cert.pem            -> ca.cert.pem (identities and permissions share the CA)
    public/permissions_ca.cert.pem         -> ca.cert.pem
    private/ca.key.pem                     the CA key (0600): keep it off the robot
    private/identity_ca.key.pem            -> ca.key.pem
    private/permissions_ca.key.pem         -> ca.key.pem
    enclaves/governance.xml, .p7s          the domain rules, S/MIME-signed by the CA
    enclaves/simdist/<node>/               one per node of the graph, and ``operator``:
        cert.pem, key.pem (0600)           its identity (CN=/simdist/<node>), signed by the CA
        identity_ca.cert.pem, permissions_ca.cert.pem, governance.p7s   copies, so an enclave stands alone
        permissions.xml, permissions.p7s   exactly its grant from ``access_policy`` (signed)

Keys and certificates follow DDS-Security 1.1 section 9.3 (prime256v1, SHA-256); signatures are detached
clear-text S/MIME (PKCS#7), which is what the builtin access-control plugin verifies.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

from simdist_ros.access_policy import ROBOTS, enclave_name, graph_access
from simdist_ros.dds_security_xml import DdsGrant, governance_xml, permissions_xml

_MODES = {"both": (True, False), "sim": (True,), "real": (False,)}


@dataclass(frozen=True, kw_only=True)
class KeystoreConfig:
    """What ``simdist security init`` builds."""

    path: Path
    """Keystore folder (must not exist, or be empty)."""
    robot: str
    """Robot whose graph gets enclaves (``go2``, ``ur5e``)."""
    domain_id: int = 0
    """The ROS_DOMAIN_ID the graph runs on: governance and permissions name it."""
    mode: str = "both"
    """``both``: enclaves for the simulated and the real graph; ``real``: no ``sim_robot``, nobody may publish
    ``/clock``; ``sim``: no drivers."""
    valid_days: int = 365
    """Lifetime of the CA, the identities and the grants; renew with a fresh keystore."""

    def __post_init__(self) -> None:
        if self.robot not in ROBOTS:
            raise ValueError(f"robot must be one of {list(ROBOTS)}, got {self.robot!r}")
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {sorted(_MODES)}, got {self.mode!r}")
        if not 0 <= self.domain_id <= 232:
            raise ValueError(f"domain_id must be in [0, 232] (the ROS 2 range), got {self.domain_id}")
        if self.valid_days < 1:
            raise ValueError(f"valid_days must be >= 1, got {self.valid_days}")


def _write(path: Path, data: bytes, mode: int = 0o644) -> None:
    # Created with its final mode: a key is never readable by others, not even for a moment.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate | None,
                 issuer_key: ec.EllipticCurvePrivateKey, not_before: datetime, not_after: datetime) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    is_ca = issuer is None
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name if is_ca else issuer.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(not_before).not_valid_after(not_after)
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=0 if is_ca else None), critical=True))
    return builder.sign(issuer_key, hashes.SHA256())


def sign_smime(data: bytes, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> bytes:
    """Detached clear-text S/MIME signature of ``data`` (the ``.p7s`` the DDS access-control plugin reads)."""
    options = [pkcs7.PKCS7Options.Text, pkcs7.PKCS7Options.DetachedSignature]
    return (pkcs7.PKCS7SignatureBuilder().set_data(data).add_signer(cert, key, hashes.SHA256())
            .sign(serialization.Encoding.SMIME, options))


def create_keystore(config: KeystoreConfig) -> list[str]:
    """Write the keystore; returns the enclave names it holds.

    Raises:
        FileExistsError: ``config.path`` exists and is not empty (a keystore is never overwritten).
    """
    root = config.path
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} exists and is not empty; a keystore is never overwritten: remove it or "
                              "choose another --keystore")
    grants = graph_access(config.robot, modes=_MODES[config.mode])
    # A day of slack before now, so a robot whose clock lags the workstation's still accepts the files.
    now = datetime.now(UTC).replace(microsecond=0)
    not_before, not_after = now - timedelta(days=1), now + timedelta(days=config.valid_days)

    for sub, mode in (("public", 0o755), ("private", 0o700), ("enclaves", 0o755)):
        (root / sub).mkdir(parents=True, exist_ok=True, mode=mode)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate(f"SimDist {config.robot} CA", ca_key, None, ca_key, not_before, not_after)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    _write(root / "public" / "ca.cert.pem", ca_pem)
    _write(root / "private" / "ca.key.pem", _pem_key(ca_key), 0o600)
    for role in ("identity_ca", "permissions_ca"):  # sros2's names for the two CA roles, one CA here
        (root / "public" / f"{role}.cert.pem").symlink_to("ca.cert.pem")
        (root / "private" / f"{role}.key.pem").symlink_to("ca.key.pem")

    governance = governance_xml(config.domain_id)
    governance_p7s = sign_smime(governance, ca_cert, ca_key)
    _write(root / "enclaves" / "governance.xml", governance)
    _write(root / "enclaves" / "governance.p7s", governance_p7s)

    for node, access in sorted(grants.items()):
        enclave = enclave_name(node)
        folder = root / "enclaves" / enclave.lstrip("/")
        folder.mkdir(parents=True, mode=0o755)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(enclave, key, ca_cert, ca_key, not_before, not_after)
        permissions = permissions_xml(enclave, DdsGrant.from_access(access), config.domain_id, not_before,
                                      not_after)
        _write(folder / "key.pem", _pem_key(key), 0o600)
        _write(folder / "cert.pem", cert.public_bytes(serialization.Encoding.PEM))
        _write(folder / "identity_ca.cert.pem", ca_pem)
        _write(folder / "permissions_ca.cert.pem", ca_pem)
        _write(folder / "governance.p7s", governance_p7s)
        _write(folder / "permissions.xml", permissions)
        _write(folder / "permissions.p7s", sign_smime(permissions, ca_cert, ca_key))
    return [enclave_name(node) for node in sorted(grants)]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simdist security init", description=__doc__.split("\n\n")[0])
    p.add_argument("robot", choices=ROBOTS, help="robot whose graph gets one enclave per node")
    p.add_argument("--keystore", type=Path, help="keystore folder (default: keystore/<robot>); must not exist")
    p.add_argument("--domain-id", type=int, help="ROS_DOMAIN_ID of the graph (default: $ROS_DOMAIN_ID or 0)")
    p.add_argument("--mode", choices=sorted(_MODES), default="both",
                   help="enclaves for the simulated graph, the real one, or both (default)")
    p.add_argument("--valid-days", type=int, default=365, help="lifetime of CA, identities and grants")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``simdist security init``."""
    ns = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    path = (ns.keystore or Path("keystore") / ns.robot).expanduser().absolute()
    try:
        env_domain = os.environ.get("ROS_DOMAIN_ID") or "0"
        if ns.domain_id is None and not env_domain.isdigit():
            raise ValueError(f"ROS_DOMAIN_ID={env_domain!r} is not a domain id; pass --domain-id")
        domain_id = ns.domain_id if ns.domain_id is not None else int(env_domain)
        config = KeystoreConfig(path=path, robot=ns.robot, domain_id=domain_id, mode=ns.mode,
                                valid_days=ns.valid_days)
        enclaves = create_keystore(config)
    except (ValueError, FileExistsError) as exc:
        print(f"simdist security init: {exc}", file=sys.stderr)
        return 2
    print(f"keystore {path}: {len(enclaves)} enclaves ({', '.join(enclaves)}), domain {config.domain_id}, "
          f"valid {config.valid_days} days")
    print(f"launch with: ros2 launch {ns.robot}_bringup simdist.launch.py security:=true keystore:={path}")
    print(f"the robot needs public/ and enclaves/ only: keep {path / 'private'} (the CA key) elsewhere")
    return 0
