"""DDS-Security 1.1 governance and permissions documents for the SimDist graph (OMG shared-CA format).

ROS names become DDS topic names the way the ROS 2 middleware mangles them: a topic ``/x`` is ``rt/x``;
a service ``/s`` is two topics, ``rq/sRequest`` (client -> server) and ``rr/sReply`` (server -> client).
``ros_discovery_info`` (no prefix) is the ROS graph's own bookkeeping topic, which every participant of
the Fast DDS and Cyclone DDS middlewares publishes and reads.

Element order follows the OMG schemas (``omg_shared_ca_governance.xsd``, ``omg_shared_ca_permissions.xsd``):
an XML schema sequence is ordered, and Fast DDS refuses a document whose elements are out of order.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime

from simdist_ros.access_policy import Access

GOVERNANCE_SCHEMA = "http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd"
PERMISSIONS_SCHEMA = "http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_permissions.xsd"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
ROS_DISCOVERY_TOPIC = "ros_discovery_info"


def topic_name(ros_topic: str) -> str:
    """``/joint_command`` -> ``rt/joint_command``."""
    return "rt" + ros_topic


def request_topic(ros_service: str) -> str:
    """``/reset_estop`` -> ``rq/reset_estopRequest`` (what a client writes and a server reads)."""
    return f"rq{ros_service}Request"


def reply_topic(ros_service: str) -> str:
    """``/reset_estop`` -> ``rr/reset_estopReply`` (what a server writes and a client reads)."""
    return f"rr{ros_service}Reply"


@dataclass(frozen=True, kw_only=True)
class DdsGrant:
    """An :class:`Access` as the DDS topic names a participant may write and read."""

    publish: frozenset[str]
    """DDS topics it may write."""
    subscribe: frozenset[str]
    """DDS topics it may read."""

    @classmethod
    def from_access(cls, access: Access) -> DdsGrant:
        """Mangle ROS names; serving a service reads requests and writes replies, calling the reverse."""
        publish = {topic_name(t) for t in access.publish} | {reply_topic(s) for s in access.serve}
        publish |= {request_topic(s) for s in access.call}
        subscribe = {topic_name(t) for t in access.subscribe} | {request_topic(s) for s in access.serve}
        subscribe |= {reply_topic(s) for s in access.call}
        return cls(publish=frozenset(publish | {ROS_DISCOVERY_TOPIC}),
                   subscribe=frozenset(subscribe | {ROS_DISCOVERY_TOPIC}))


def _sub(parent: ET.Element, tag: str, text: str | None = None) -> ET.Element:
    element = ET.SubElement(parent, tag)
    if text is not None:
        element.text = text
    return element


def _document(root: ET.Element) -> bytes:
    ET.indent(root, space="  ")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n").encode()


def _root(schema: str) -> ET.Element:
    root = ET.Element("dds")
    root.set("xmlns:xsi", _XSI)
    root.set("xsi:noNamespaceSchemaLocation", schema)
    return root


def governance_xml(domain_id: int) -> bytes:
    """One domain rule: only authenticated participants join; discovery, liveliness and data encrypted.

    Every topic is access-controlled (read and write), so a participant may use only what its signed
    permissions grant. RTPS messages are signed, not encrypted, on top of per-topic encryption (the
    choice ROS 2's own default governance makes: encrypting twice buys nothing).
    """
    root = _root(GOVERNANCE_SCHEMA)
    rule = _sub(_sub(root, "domain_access_rules"), "domain_rule")
    _sub(_sub(rule, "domains"), "id", str(domain_id))
    for tag, text in (("allow_unauthenticated_participants", "false"), ("enable_join_access_control", "true"),
                      ("discovery_protection_kind", "ENCRYPT"), ("liveliness_protection_kind", "ENCRYPT"),
                      ("rtps_protection_kind", "SIGN")):
        _sub(rule, tag, text)
    topic_rule = _sub(_sub(rule, "topic_access_rules"), "topic_rule")
    for tag, text in (("topic_expression", "*"), ("enable_discovery_protection", "true"),
                      ("enable_liveliness_protection", "true"), ("enable_read_access_control", "true"),
                      ("enable_write_access_control", "true"), ("metadata_protection_kind", "ENCRYPT"),
                      ("data_protection_kind", "ENCRYPT")):
        _sub(topic_rule, tag, text)
    return _document(root)


def _xml_time(moment: datetime) -> str:
    # xs:dateTime without a zone, in UTC (what the certificate says): the form Fast DDS and sros2 use.
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def permissions_xml(enclave: str, grant: DdsGrant, domain_id: int, not_before: datetime,
                    not_after: datetime) -> bytes:
    """One grant for ``CN=<enclave>``: allow exactly ``grant`` on ``domain_id``, deny everything else."""
    root = _root(PERMISSIONS_SCHEMA)
    element = _sub(_sub(root, "permissions"), "grant")
    element.set("name", enclave)
    _sub(element, "subject_name", f"CN={enclave}")
    validity = _sub(element, "validity")
    _sub(validity, "not_before", _xml_time(not_before))
    _sub(validity, "not_after", _xml_time(not_after))
    rule = _sub(element, "allow_rule")
    _sub(_sub(rule, "domains"), "id", str(domain_id))
    for kind, names in (("publish", grant.publish), ("subscribe", grant.subscribe)):
        if names:
            topics_element = _sub(_sub(rule, kind), "topics")
            for name in sorted(names):
                _sub(topics_element, "topic", name)
    _sub(element, "default", "DENY")
    return _document(root)
