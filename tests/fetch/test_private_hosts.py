"""fetch_headers: which hop gets which headers (the rules), and the Fetcher sending them only there."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from mcp_server.core.errors import DownloadError
from mcp_server.core.settings import Settings
from mcp_server.fetch._credentials import HostHeaders

from .servers import LoopbackServer, fetch_once, make_settings, respond

pytestmark = pytest.mark.anyio

TOKEN = "Bearer s3cr3t-t0ken-xyz"


def _rules(rules: dict[str, dict[str, str]]) -> HostHeaders:
    return HostHeaders(make_settings(fetch_headers=rules))


def test_the_most_specific_rule_wins_and_a_suffix_pattern_matches_subdomains_only() -> None:
    rules = _rules({
        "git.example.com": {"X-Key": "host"},
        "git.example.com:8443": {"X-Key": "host-port"},
        "*.example.com": {"X-Key": "suffix"},
        "*.deep.example.com": {"X-Key": "longer-suffix"},
        "[::1]:9000": {"X-Key": "v6"},
    })
    assert rules.for_hop(httpx.URL("https://git.example.com/a")) == {"X-Key": "host"}
    assert rules.for_hop(httpx.URL("https://GIT.example.com.:8443/a")) == {"X-Key": "host-port"}
    assert rules.for_hop(httpx.URL("https://wiki.example.com/a")) == {"X-Key": "suffix"}
    assert rules.for_hop(httpx.URL("https://a.deep.example.com/a")) == {"X-Key": "longer-suffix"}
    assert rules.for_hop(httpx.URL("http://[::1]:9000/a")) == {"X-Key": "v6"}
    for other in ("https://example.com/a", "https://example.com.evil.test/a", "https://notexample.com/a",
                  "http://[::1]:9001/a"):
        assert rules.for_hop(httpx.URL(other)) == {}, other


def test_a_chain_downgraded_from_https_to_http_carries_no_headers_even_to_the_same_host() -> None:
    rules = _rules({"docs.example.com": {"Authorization": TOKEN}})
    https, http = httpx.URL("https://docs.example.com/a"), httpx.URL("http://docs.example.com/b")
    assert rules.for_hop(https) == {"Authorization": TOKEN}
    assert rules.for_hop(http, downgraded=True) == {}
    assert rules.for_hop(https, downgraded=True) == {}  # back on https later in the chain: still none
    assert rules.for_hop(http) == {"Authorization": TOKEN}  # asked for plain http: configured so


def test_malformed_rules_are_refused_at_start_up_without_showing_a_value() -> None:
    for rules in ({"not a host": {"X": TOKEN}}, {"h.test": {"Host": TOKEN}}, {"h.test": {"X": TOKEN + "\r\nY: 1"}},
                  {"h.test": {"bad name": TOKEN}}, {"h.test": TOKEN}):
        with pytest.raises(ValidationError) as refused:
            make_settings(fetch_headers=rules)
        assert "s3cr3t" not in str(refused.value)


def test_the_rules_come_from_the_environment_and_from_a_file_and_are_masked_in_repr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    secrets = tmp_path / "fetch-headers.json"
    secrets.write_text(json.dumps({"files.test": {"Authorization": TOKEN}, "both.test": {"X-From": "file"}}))
    monkeypatch.setenv("MCP_FETCH_HEADERS", json.dumps({"env.test:8080": {"X-Api-Key": TOKEN},
                                                        "both.test": {"X-From": "env"}}))
    monkeypatch.setenv("MCP_FETCH_HEADERS_FILE", str(secrets))
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    rules = HostHeaders(settings)
    assert rules.for_hop(httpx.URL("http://files.test/x")) == {"Authorization": TOKEN}
    assert rules.for_hop(httpx.URL("http://env.test:8080/x")) == {"X-Api-Key": TOKEN}
    assert rules.for_hop(httpx.URL("http://both.test/x")) == {"X-From": "env"}  # the variable wins
    for shown in (repr(settings), str(settings), settings.model_dump_json(), str(settings.model_dump()), repr(rules)):
        assert "s3cr3t" not in shown
    monkeypatch.setenv("MCP_FETCH_HEADERS_FILE", str(tmp_path / "missing.json"))
    with pytest.raises(ValidationError, match="fetch_headers_file"):
        Settings(_env_file=None)  # type: ignore[call-arg]


async def test_the_headers_go_to_the_configured_host_and_not_across_a_redirect_to_another_host(
    web: LoopbackServer,
) -> None:
    def private(handler: object) -> None:
        ok = handler.headers.get("Authorization") == TOKEN  # type: ignore[attr-defined]
        respond(handler, 200 if ok else 401, b"private text" if ok else b"", {"Content-Type": "text/plain"})  # type: ignore[arg-type]

    web.route("/private", private)
    web.route("/away", lambda h: respond(h, 302, b"", {"Location": f"http://localhost:{web.port}/landing"}))
    web.route("/landing", lambda h: respond(h, 200, b"landed", {"Content-Type": "text/plain"}))
    settings = make_settings(fetch_allowlist=["127.0.0.1", "localhost"],
                             fetch_headers={f"127.0.0.1:{web.port}": {"Authorization": TOKEN}})
    document = await fetch_once(web.url("/private"), settings)
    assert document.data == b"private text"
    landed = await fetch_once(web.url("/away"), settings)
    assert landed.data == b"landed"
    sent = {seen.path: seen.headers.get("authorization") for seen in web.requests}
    assert sent == {"/private": TOKEN, "/away": TOKEN, "/landing": None}
    with pytest.raises(DownloadError) as refused:  # no rule for this port: 401, and the message names no secret
        await fetch_once(web.url("/private"), make_settings(fetch_headers={"127.0.0.1:1": {"Authorization": TOKEN}}))
    assert "401" in refused.value.message and "s3cr3t" not in str(refused.value.to_dict())
