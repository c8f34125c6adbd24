"""docs/team.md as a user meets it: its first block pasted into bash starts a gateway that wants a token, and the
TLS settings serve HTTPS with a certificate and key (a self-signed one, made here)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import re
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .cluster import free_port
from .upstreams.helpers import toy

pytestmark = pytest.mark.process

TEAM = Path(__file__).resolve().parent.parent / "docs" / "team.md"
VENV_BIN = Path(sys.executable).parent


def _first_block(section: str) -> str:
    text = TEAM.read_text()
    start = text.index(f"\n## {section}\n")
    found = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    assert found is not None, f"no sh block under {section!r}"
    return found.group(1)


@contextmanager
def _bash(script: str, cwd: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """`script` run by bash as if pasted, in a process group of its own (stopped as a group at the end)."""
    log = (cwd / "bash.log").open("wb")
    process = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                               stderr=log, start_new_session=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


async def _answers(url: str, *, verify: ssl.SSLContext | bool = True, timeout: float = 90) -> None:
    async with httpx2.AsyncClient(timeout=2, verify=verify) as http:
        with anyio.fail_after(timeout):
            while True:
                try:
                    await http.get(url)
                    return
                except httpx2.TransportError:
                    await anyio.sleep(0.1)


async def test_the_identity_provider_block_pasted_into_bash_starts_a_gateway_that_wants_a_token(
        tmp_path: Path) -> None:
    """Before: its variables were set without `export`: pasted into bash, the gateway started on 0.0.0.0 with no
    authentication at all. The block runs as written, but on loopback and a free port (this is a shared machine),
    with a real upstream in team-mcp.json; the issuer is never asked (no token is sent)."""
    block = _first_block("The identity provider")
    assert "--host 0.0.0.0" in block
    script = block.replace("--host 0.0.0.0", "--host 127.0.0.1")
    (tmp_path / "team-mcp.json").write_text(json.dumps({"mcpServers": {"toy": toy("toy")}}))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", LAZYTOOLS_PORT=str(port))
    with _bash(script, tmp_path, env) as process:
        await _answers(f"http://127.0.0.1:{port}/healthz")
        assert process.poll() is None
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.post(f"http://127.0.0.1:{port}/mcp", headers={
                "Host": "tools.example.com", "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json"}, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    said = (tmp_path / "bash.log").read_text(errors="replace")
    assert answer.status_code == 401, (answer.status_code, answer.text, said[-3000:])
    challenge = answer.headers["www-authenticate"]
    assert 'resource_metadata="https://tools.example.com/.well-known/oauth-protected-resource/mcp"' in challenge
    assert 'scope="tools"' in challenge


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                               x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    cert, private = directory / "cert.pem", directory / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return cert, private


async def test_tls_settings_serve_https_with_the_certificate_given(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    env.update(LAZYTOOLS_TLS_CERT=str(cert), LAZYTOOLS_TLS_KEY=str(key), LAZYTOOLS_LOG_LEVEL="INFO")
    script = f"exec {sys.executable} -m lazytools --transport http --port {port} --files-root {tmp_path}"
    trusted = ssl.create_default_context(cafile=str(cert))
    with _bash(script, tmp_path, env):
        await _answers(f"https://127.0.0.1:{port}/healthz", verify=trusted)
        async with httpx2.AsyncClient(verify=trusted, timeout=30) as http:
            with pytest.raises(httpx2.TransportError):  # plain HTTP on the TLS port is no answer
                await _plain(port)
            async with Client(streamable_http_client(f"https://127.0.0.1:{port}/mcp", http_client=http),
                              mode="legacy", client_info=types.Implementation(name="mcp", version="1.0")) as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == ["search_tools", "invoke_tool"]
    said = (tmp_path / "bash.log").read_text(errors="replace")
    assert f"streamable HTTP at https://127.0.0.1:{port}/mcp" in said, said[-3000:]


async def _plain(port: int) -> None:
    async with httpx2.AsyncClient(timeout=5) as http:
        answer = await http.get(f"http://127.0.0.1:{port}/healthz")
        raise AssertionError(f"plain HTTP was answered: {answer.status_code}")


@pytest.mark.parametrize("only", ["LAZYTOOLS_TLS_CERT", "LAZYTOOLS_TLS_KEY"])
def test_a_certificate_without_its_key_is_refused_at_start(tmp_path: Path, only: str) -> None:
    cert, _key = _self_signed(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    env[only] = str(cert)
    done = subprocess.run([sys.executable, "-m", "lazytools", "--transport", "http"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "LAZYTOOLS_TLS_CERT and LAZYTOOLS_TLS_KEY go together" in done.stderr, done.stderr
