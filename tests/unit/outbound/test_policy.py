"""Which hosts a user's request may reach: every spelling of an internal address is refused."""

from __future__ import annotations

import ipaddress

import pytest

from flowdeck.outbound import AddressRefusedError, OutboundPolicy
from flowdeck.outbound.addresses import address_refusal, numeric_host
from tests.support.addresses import INTERNAL_HOSTS

NOBODY = OutboundPolicy()

REFUSED = INTERNAL_HOSTS


@pytest.mark.parametrize(("host", "kind"), REFUSED.items())
def test_internal_hosts_are_refused_by_name_or_address(host: str, kind: str) -> None:
    reason = NOBODY.name_refusal(host)
    assert reason is not None, host
    assert kind in reason


@pytest.mark.parametrize("host", ["example.com", "8.8.8.8", "134744072", "[2001:4860:4860::8888]", "api.example.test"])
def test_public_hosts_pass(host: str) -> None:
    assert NOBODY.name_refusal(host) is None


def test_spellings_are_read_as_the_resolver_reads_them() -> None:
    assert numeric_host("2130706433") == ipaddress.ip_address("127.0.0.1")
    assert numeric_host("0177.1") == ipaddress.ip_address("127.0.0.1")
    assert numeric_host("[::ffff:10.1.2.3]") == ipaddress.ip_address("::ffff:10.1.2.3")
    assert numeric_host("example.com") is None


def test_the_operator_allow_list_admits_hosts_and_networks() -> None:
    policy = OutboundPolicy.parse(" intranet.example , 10.20.0.0/16,127.0.0.1, ::1 ")
    assert policy.name_refusal("INTRANET.example.") is None
    assert policy.name_refusal("10.20.3.4") is None and policy.name_refusal("10.21.0.1") is not None
    assert policy.name_refusal("127.0.0.1") is None and policy.name_refusal("2130706433") is None
    assert policy.name_refusal("[::ffff:127.0.0.1]") is None  # the same address, mapped
    assert policy.name_refusal("127.0.0.2") is not None and policy.name_refusal("localhost") is not None
    policy.check_resolved("intranet.example", [ipaddress.ip_address("10.99.0.1")])  # a listed name may be anything
    with pytest.raises(AddressRefusedError, match="FLOWDECK_HTTP_ALLOW"):
        policy.check_resolved("wiki.example", [ipaddress.ip_address("8.8.8.8"), ipaddress.ip_address("10.99.0.1")])
    with pytest.raises(ValueError, match="FLOWDECK_HTTP_ALLOW: 'not a host!' is not a host name"):
        OutboundPolicy.parse("ok.example,not a host!")


def test_addresses_are_judged_by_what_they_are() -> None:
    assert address_refusal(ipaddress.ip_address("93.184.216.34")) is None
    assert address_refusal(ipaddress.ip_address("2606:2800:220:1::1")) is None
    assert "link-local" in (address_refusal(ipaddress.ip_address("fe80::1%2")) or "")
