"""TLS to a pinned address still verifies the certificate against the hostname (SNI)."""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mcp_server.core.errors import DownloadError
from mcp_server.fetch import StaticResolver

from .servers import LoopbackServer, fetch_once, make_settings, respond

pytestmark = pytest.mark.anyio


def _certificate(
    subject: str, issuer: x509.Name | None, signer: ec.EllipticCurvePrivateKey | None, *, ca: bool
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
    return builder.sign(signer or key, hashes.SHA256()), key


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for fixture.test signed by it."""
    folder = tmp_path_factory.mktemp("tls")
    ca_cert, ca_key = _certificate("test CA", None, None, ca=True)
    leaf, leaf_key = _certificate("fixture.test", ca_cert.subject, ca_key, ca=False)
    (folder / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (folder / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (folder / "leaf.key").write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return folder / "ca.pem", folder / "leaf.pem", folder / "leaf.key"


@pytest.fixture(scope="module")
def tls_server(tls_files: tuple[Path, Path, Path]) -> Iterator[LoopbackServer]:
    _, cert, key = tls_files
    server = LoopbackServer.start("127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    server.httpd.routes["/doc"] = lambda h: respond(h, 200, b"over tls")
    yield server
    server.close()


def trusting(ca: Path) -> httpx.AsyncHTTPTransport:
    return httpx.AsyncHTTPTransport(verify=ssl.create_default_context(cafile=str(ca)))


async def test_https_to_a_pinned_address_verifies_the_certificate_for_the_hostname(
    tls_files: tuple[Path, Path, Path], tls_server: LoopbackServer
) -> None:
    resolver = StaticResolver({"fixture.test": "127.0.0.1"})
    doc = await fetch_once(
        f"https://fixture.test:{tls_server.port}/doc",
        make_settings(fetch_allowlist=["fixture.test"]),
        transport=trusting(tls_files[0]),
        resolver=resolver,
    )
    assert doc.data == b"over tls"
    assert doc.final_url == f"https://fixture.test:{tls_server.port}/doc"


async def test_a_certificate_for_another_name_is_refused(
    tls_files: tuple[Path, Path, Path], tls_server: LoopbackServer
) -> None:
    resolver = StaticResolver({"other.test": "127.0.0.1"})
    with pytest.raises(DownloadError, match="TLS certificate of other.test could not be verified"):
        await fetch_once(
            f"https://other.test:{tls_server.port}/doc",
            make_settings(fetch_allowlist=["other.test"]),
            transport=trusting(tls_files[0]),
            resolver=resolver,
        )


async def test_a_redirect_from_https_to_http_drops_the_private_hosts_headers_even_on_the_same_name(
    tls_files: tuple[Path, Path, Path], tls_server: LoopbackServer, web: LoopbackServer,
) -> None:
    token = "Bearer tls-only-token"
    tls_server.httpd.requests.clear()
    tls_server.httpd.routes["/down"] = lambda h: respond(
        h, 302, b"", {"Location": f"http://fixture.test:{web.port}/landing"})
    web.route("/landing", lambda h: respond(h, 200, b"landed in clear text"))
    doc = await fetch_once(
        f"https://fixture.test:{tls_server.port}/down",
        make_settings(fetch_allowlist=["fixture.test"], fetch_headers={"fixture.test": {"Authorization": token}}),
        transport=trusting(tls_files[0]), resolver=StaticResolver({"fixture.test": "127.0.0.1"}),
    )
    assert doc.data == b"landed in clear text"
    assert [seen.headers.get("authorization") for seen in tls_server.requests] == [token]  # over TLS: sent
    assert [seen.headers.get("authorization") for seen in web.requests] == [None]  # over http after it: not
