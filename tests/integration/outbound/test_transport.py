"""The guarded transport against real servers on 127.0.0.1: refusal, allow list, redirects, rebinding, TLS."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from flowdeck.outbound import AddressRefusedError, OutboundPolicy, guarded_transport
from flowdeck.outbound import transport as transport_module
from tests.integration.queries.support import http_server

LOCAL = OutboundPolicy.parse("127.0.0.1")


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with http_server() as url:
        yield url


def client(policy: OutboundPolicy, **kw: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=guarded_transport(policy, **kw), trust_env=False, timeout=5)


async def test_loopback_is_refused_unless_the_operator_allows_it(base: str) -> None:
    port = base.rsplit(":", 1)[1]
    async with client(OutboundPolicy()) as refused:
        for url in (
            f"{base}/",
            f"http://2130706433:{port}/",
            f"http://[::ffff:127.0.0.1]:{port}/",
            f"http://localhost:{port}/",
        ):
            with pytest.raises(AddressRefusedError, match="FLOWDECK_HTTP_ALLOW"):
                await refused.get(url + "echo")
    async with client(LOCAL) as allowed:
        assert (await allowed.get(f"{base}/echo")).json()["path"] == "/echo"


async def test_every_redirect_hop_is_checked_again(base: str) -> None:
    port = base.rsplit(":", 1)[1]
    async with client(LOCAL) as allowed:
        fine = await allowed.get(f"{base}/redirect", params={"to": f"{base}/echo"}, follow_redirects=True)
        assert fine.json()["path"] == "/echo"
        for target in (f"http://127.0.0.2:{port}/echo", f"http://169.254.169.254:{port}/latest/meta-data/"):
            with pytest.raises(AddressRefusedError):
                await allowed.get(f"{base}/redirect", params={"to": target}, follow_redirects=True)


async def test_the_checked_address_is_the_one_connected_to(base: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS rebinding: a name that answers 127.0.0.1 (allowed) once, then 10.0.0.1. No second lookup happens."""
    answers = [[ipaddress.ip_address("127.0.0.1")], [ipaddress.ip_address("10.0.0.1")]]
    asked: list[str] = []

    async def rebinding(host: str, port: int, timeout: float | None = None) -> list[Any]:
        asked.append(host)
        return answers[min(len(asked), 2) - 1]

    monkeypatch.setattr(transport_module, "resolve", rebinding)
    port = base.rsplit(":", 1)[1]
    async with client(LOCAL) as first:
        echo = (await first.get(f"http://rebind.test:{port}/echo")).json()
    assert echo["headers"]["host"] == f"rebind.test:{port}"  # the name is kept for the server
    assert asked == ["rebind.test"]  # resolved once; the connection went to the checked 127.0.0.1
    async with client(LOCAL) as second:
        with pytest.raises(AddressRefusedError, match=r"10\.0\.0\.1 is a private address"):
            await second.get(f"http://rebind.test:{port}/echo")


def _certificate(tmp: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class _Hello(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = self.headers.get("Host", "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def test_https_keeps_the_host_name_for_sni_and_the_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _certificate(tmp_path, "secure.test")
    server_names: list[str | None] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda _sock, name, _ctx: server_names.append(name)  # type: ignore[assignment,misc]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    async def local(host: str, port: int, timeout: float | None = None) -> list[Any]:
        return [ipaddress.ip_address("127.0.0.1")]

    monkeypatch.setattr(transport_module, "resolve", local)
    trusted = ssl.create_default_context(cafile=str(cert))
    try:
        async with client(LOCAL, verify=trusted) as tls:
            answer = await tls.get(f"https://secure.test:{server.server_address[1]}/")
        assert answer.status_code == 200 and answer.text == f"secure.test:{server.server_address[1]}"
        assert server_names == ["secure.test"]  # SNI carried the name, and the certificate was checked for it
    finally:
        server.shutdown()
        server.server_close()
