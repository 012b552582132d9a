"""The tests' check that a cluster listens on loopback only reads every form of an address.

A dual-stack socket shows an IPv4 address in its IPv4-mapped IPv6 form (``::ffff:127.0.0.7``);
Python 3.11's ``ipaddress`` calls that neither loopback nor unspecified, so a check built on
it alone would fail a loopback listener or pass a mapped wildcard as a specific address.
Expected values: RFC 4291 section 2.5.5.2 (the mapped form) and RFC 1122 (127/8).
"""

from __future__ import annotations

import pytest

from tests.support.listening import is_loopback, is_wildcard
from tests.support.ray_cluster import LoopbackCluster


@pytest.mark.parametrize(("address", "loopback", "wildcard"), [
    ("127.0.0.1", True, False),
    ("127.0.0.7", True, False),
    ("::1", True, False),
    ("::ffff:127.0.0.1", True, False),
    ("::ffff:127.0.0.9", True, False),
    ("0:0:0:0:0:ffff:7f00:8", True, False),  # ::ffff:127.0.0.8 written out
    ("0.0.0.0", False, True),
    ("::", False, True),
    ("::ffff:0.0.0.0", False, True),
    ("10.0.0.1", False, False),
    ("::ffff:10.0.0.1", False, False),
    ("::ffff:128.0.0.1", False, False),
    ("fe80::1", False, False),
])
def test_loopback_and_wildcard_read_ipv4_mapped_addresses(address, loopback, wildcard):
    assert is_loopback(address) is loopback
    assert is_wildcard(address) is wildcard


def test_a_test_cluster_accepts_mapped_loopback_nodes_and_refuses_others(tmp_path):
    # nothing starts: the node addresses are checked when the cluster object is made
    LoopbackCluster(node_ips=("::ffff:127.0.0.2", "127.0.0.3"), temp_dir=str(tmp_path))
    with pytest.raises(ValueError, match="::ffff:10.0.0.2 is not a loopback address"):
        LoopbackCluster(node_ips=("127.0.0.2", "::ffff:10.0.0.2"), temp_dir=str(tmp_path))
