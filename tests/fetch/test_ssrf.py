"""SSRF guard (SECURITY S1-S3, S6, S7): every probe is refused and the canary never hears of it."""

from __future__ import annotations

import ipaddress

import httpx
import pytest

from mcp_server.core.errors import DownloadError, ValidationError
from mcp_server.fetch import StaticResolver, SystemResolver, is_blocked
from mcp_server.fetch._addresses import literal_address

from .servers import LoopbackServer, fetch_once, make_settings, respond

pytestmark = pytest.mark.anyio

CANARY = "127.0.0.2"
# Names a fake DNS answers; the real resolver only ever sees numeric hosts in these probes.
NAMES = {
    "canary.test": CANARY,
    "allowed-then-blocked.test": ["8.8.8.8", CANARY],
    "allowed-then-blocked6.test": ["2606:4700:4700::1111", f"::ffff:{CANARY}"],
    "metadata.test": "169.254.169.254",
    "internal.test": "10.1.2.3",
    "ula.test": "fd00::1",
    "loopback6.test": "::1",
}

# {port} is the canary's port: a probe that got through would be counted.
PROBES = [
    "http://127.0.0.2:{port}/",
    "https://127.0.0.2:{port}/",
    "http://2130706434:{port}/",  # decimal
    "http://0x7f000002:{port}/",  # hex
    "http://0x7f.2:{port}/",
    "http://0x7f.0.0.2:{port}/",
    "http://127.2:{port}/",
    "http://127.0.2:{port}/",
    "http://0177.0.0.2:{port}/",  # octal
    "http://[::ffff:127.0.0.2]:{port}/",
    "http://[::ffff:7f00:2]:{port}/",
    "http://[0:0:0:0:0:ffff:7f00:2]:{port}/",
    "http://[::127.0.0.2]:{port}/",  # IPv4-compatible
    "http://[64:ff9b::7f00:2]:{port}/",  # NAT64
    "http://[2002:7f00:2::]:{port}/",  # 6to4
    "http://user:secret@127.0.0.2:{port}/",
    "http://example.com@127.0.0.2:{port}/",
    "http://127.0.0.2:{port}/#@example.com",
    "http://canary.test:{port}/",
    "http://CANARY.TEST:{port}/",
    "http://allowed-then-blocked.test:{port}/",
    "http://allowed-then-blocked6.test:{port}/",
    "http://0.0.0.0:{port}/",
    "http://0:{port}/",
    "http://[::]:{port}/",
    "http://[::1]:{port}/",
    "http://[0:0:0:0:0:0:0:1]:{port}/",
    "http://loopback6.test:{port}/",
    "ftp://127.0.0.2:{port}/",
    "gopher://127.0.0.2:{port}/_GET",
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/latest/meta-data/",
    "http://0xa9fea9fe/",
    "http://0251.0376.0251.0376/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:a9fe:a9fe::]/",
    "http://[fd00:ec2::254]/",
    "http://metadata.test/",
    "http://internal.test/",
    "http://ula.test/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://192.0.0.1/",
    "http://198.18.0.1/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://255.255.255.255/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[fec0::1]/",
    "http://[ff02::1]/",
]


@pytest.mark.parametrize("probe", PROBES)
async def test_probe_is_refused_and_never_reaches_the_canary(probe: str, canary: LoopbackServer) -> None:
    url = probe.format(port=canary.port)
    settings = make_settings(connect_timeout=1, download_deadline=5)
    uses_names = any(name in url.lower() for name in NAMES)
    resolver = StaticResolver(NAMES) if uses_names else SystemResolver()
    with pytest.raises((DownloadError, ValidationError)) as refused:
        await fetch_once(url, settings, resolver=resolver)
    if isinstance(refused.value, DownloadError):
        assert "refusing" in refused.value.message
    assert "secret" not in refused.value.message
    assert canary.hits == 0


NUMERIC_HOSTS = ["2130706433", "0x7f.1", "127.1", "0x7f000001", "0177.0.0.1", "::ffff:7f00:1", "::1", "0"]


@pytest.mark.parametrize("host", NUMERIC_HOSTS)
async def test_numeric_hosts_are_read_as_the_address_getaddrinfo_would_connect_to(host: str) -> None:
    answers = await SystemResolver().resolve(host, 80)
    literal = literal_address(host)
    assert literal is not None
    # getaddrinfo answers "::ffff:7f00:1" as the mapped IPv6 form; both name 127.0.0.1.
    assert [getattr(answer, "ipv4_mapped", None) or answer for answer in answers] == [literal]
    assert is_blocked(literal)


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.216.34",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ],
)
def test_public_addresses_are_not_blocked(address: str) -> None:
    assert not is_blocked(ipaddress.ip_address(address))


async def test_a_resolver_answering_allowed_then_blocked_is_refused(
    web: LoopbackServer, canary: LoopbackServer
) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"fixture"))
    resolver = StaticResolver({"mixed.test": ["127.0.0.1", CANARY]})
    with pytest.raises(DownloadError, match="refusing"):
        await fetch_once(f"http://mixed.test:{web.port}/doc", resolver=resolver)
    assert web.hits == 0
    assert canary.hits == 0


class RebindingResolver:
    """Answers the allowlisted fixture first and the canary on every later lookup."""

    def __init__(self) -> None:
        self.calls = 0

    async def resolve(self, host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        self.calls += 1
        return [ipaddress.ip_address("127.0.0.1" if self.calls == 1 else CANARY)]


async def test_a_hop_is_resolved_once_so_a_rebinding_answer_is_never_used(
    web: LoopbackServer, canary: LoopbackServer
) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"fixture"))
    resolver = RebindingResolver()
    settings = make_settings(fetch_allowlist=["rebind.test"])
    doc = await fetch_once(f"http://rebind.test:{web.port}/doc", settings, resolver=resolver)
    assert doc.data == b"fixture"
    assert resolver.calls == 1
    assert canary.hits == 0


async def test_the_connection_goes_to_the_checked_address_with_the_original_host_header(
    web: LoopbackServer, canary: LoopbackServer
) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"pinned"))
    resolver = StaticResolver({"fixture.test": "127.0.0.1"})
    settings = make_settings(fetch_allowlist=["fixture.test"])
    doc = await fetch_once(f"http://fixture.test:{web.port}/doc", settings, resolver=resolver)
    assert doc.data == b"pinned"
    assert doc.final_url == f"http://fixture.test:{web.port}/doc"
    assert [seen.headers["host"] for seen in web.requests] == [f"fixture.test:{web.port}"]
    assert resolver.calls == ["fixture.test"]
    assert canary.hits == 0


async def test_https_requests_carry_the_hostname_for_sni_while_the_url_holds_the_address() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b"ok")

    resolver = StaticResolver({"docs.test": "93.184.216.34", "v6.test": "2606:4700:4700::1111"})
    transport = httpx.MockTransport(handler)
    await fetch_once("https://docs.test/a.pdf", transport=transport, resolver=resolver)
    await fetch_once("https://v6.test:8443/b", transport=transport, resolver=resolver)
    assert [str(r.url) for r in seen] == [
        "https://93.184.216.34/a.pdf",
        "https://[2606:4700:4700::1111]:8443/b",
    ]
    assert [r.headers["host"] for r in seen] == ["docs.test", "v6.test:8443"]
    assert [r.extensions["sni_hostname"] for r in seen] == ["docs.test", "v6.test"]


async def test_loopback_is_refused_without_an_allowlist(web: LoopbackServer) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"fixture"))
    with pytest.raises(DownloadError, match="fetch_allowlist"):
        await fetch_once(web.url("/doc"), make_settings(fetch_allowlist=[]))
    assert web.hits == 0


async def test_a_cidr_allowlist_admits_only_the_addresses_inside_it(
    web: LoopbackServer, canary: LoopbackServer
) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"fixture"))
    settings = make_settings(fetch_allowlist=["127.0.0.0/31"])
    assert (await fetch_once(web.url("/doc"), settings)).data == b"fixture"
    with pytest.raises(DownloadError, match="refusing"):
        await fetch_once(canary.url("/"), settings)
    assert canary.hits == 0


async def test_a_wider_cidr_allowlist_reaches_the_canary_which_proves_the_probes_could_have(
    canary: LoopbackServer,
) -> None:
    doc = await fetch_once(canary.url("/"), make_settings(fetch_allowlist=["127.0.0.0/30"]))
    assert doc.data == b"canary"
    assert canary.hits == 1


async def test_ports_outside_the_port_allowlist_are_refused(
    web: LoopbackServer, canary: LoopbackServer
) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"fixture"))
    settings = make_settings(fetch_allowlist=["127.0.0.0/8"], allowed_ports=[str(web.port)])
    assert (await fetch_once(web.url("/doc"), settings)).data == b"fixture"
    with pytest.raises(DownloadError, match="allowed_ports"):
        await fetch_once(canary.url("/"), settings)
    assert canary.hits == 0


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"])
async def test_proxy_environment_variables_are_ignored(
    variable: str, web: LoopbackServer, canary: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"direct"))
    monkeypatch.setenv(variable, canary.url("/"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    doc = await fetch_once(web.url("/doc"))
    assert doc.data == b"direct"
    assert canary.hits == 0
