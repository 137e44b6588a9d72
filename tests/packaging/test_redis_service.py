"""Redis as a network service (issue 53, item 5): compose.yaml's Redis asks for the password
bin/compose-env writes, and the URL forms docs/operating.md shows, a password and TLS (rediss://),
work for every client the service makes: the cache's, the event loop's and Celery's broker. Real
redis-server processes here; the stack itself is `make test-stack`'s."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import urllib.parse
from pathlib import Path

import pytest
import redis
import yaml

from config import shared_cache
from harness.processes import ROOT, free_port, running_redis
from tests.support import wait_until


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def compose_env(tmp_path: Path) -> dict[str, str]:
    made = subprocess.run([str(ROOT / "bin/compose-env")], capture_output=True, text=True, check=True)
    (tmp_path / "transcription.env").write_text(made.stdout)
    return dict(line.split("=", 1) for line in made.stdout.splitlines() if line and not line.startswith("#"))


def test_compose_yaml_parses_and_every_role_takes_redis_from_the_settings_file(tmp_path):
    services = compose()["services"]
    compose_env(tmp_path)
    done = subprocess.run(
        [str(ROOT / ".venv/bin/podman-compose"), "--file", str(ROOT / "compose.yaml"), "config"],
        cwd=ROOT,
        env={**os.environ, "ENV_FILE": str(tmp_path / "transcription.env")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for name in ("migrate", "web", "worker-media", "worker-asr", "worker-burn", "worker-hooks", "beat", "redis"):
        assert services[name]["env_file"] == "${ENV_FILE:-transcription.env}", name
        # an address without the password here would override transcription.env's
        assert "REDIS_URL" not in (services[name].get("environment") or {}), name


def _redis_command(port: int, folder: Path) -> str:
    """compose.yaml's Redis command for this machine: its port, data and settings file in `folder`
    ($$ is compose's escape of $)."""
    command = compose()["services"]["redis"]["command"]
    assert command[:2] == ["sh", "-c"]
    assert "requirepass" not in command[2].split("redis-server")[-1], "not on a command line every user sees in ps"
    script = command[2].replace("$$", "$").replace("/tmp/redis-auth.conf", str(folder / "auth.conf"))
    return script.replace("--bind 0.0.0.0", f"--bind 127.0.0.1 --port {port} --save ''").replace(
        "--dir /data", f"--dir {folder}"
    )


def test_composes_redis_asks_every_client_for_the_password_compose_env_made(tmp_path):
    settings = compose_env(tmp_path)
    password = settings["REDIS_PASSWORD"]
    assert len(password) >= 24
    url = urllib.parse.urlsplit(settings["REDIS_URL"])
    assert (url.scheme, url.hostname, url.port, url.password) == ("redis", "redis", 6379, password)
    port = free_port()
    log = (tmp_path / "redis.log").open("w")
    env = {"PATH": os.environ["PATH"], "REDIS_PASSWORD": password}
    process = subprocess.Popen(["sh", "-c", _redis_command(port, tmp_path)], env=env, stdout=log, stderr=log)
    try:
        client = shared_cache.connect(settings["REDIS_URL"].replace("@redis:6379", f"@127.0.0.1:{port}"))

        def answers() -> bool:
            try:
                return client.ping()
            except redis.ConnectionError:
                return False

        wait_until(answers, lambda: "PING answered: " + (tmp_path / "redis.log").read_text(), 10, interval=0.1)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port).ping()
        healthcheck = compose()["services"]["redis"]["healthcheck"]["test"]
        assert healthcheck[0] == "CMD-SHELL"
        probe = healthcheck[1].replace("$$", "$").replace("redis-cli ping", f"redis-cli -p {port} ping")
        assert subprocess.run(["sh", "-c", probe], env=env).returncode == 0
        assert subprocess.run(["sh", "-c", probe], env={**env, "REDIS_PASSWORD": "wrong"}).returncode != 0
    finally:
        process.terminate()
        process.wait(10)
    refused = subprocess.run(
        ["sh", "-c", _redis_command(free_port(), tmp_path)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"]},
    )
    assert refused.returncode == 1 and "REDIS_PASSWORD is missing" in refused.stderr


@pytest.fixture
def certificates(tmp_path) -> Path:
    """A certificate authority of this test's own, and a server certificate it signed for localhost."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
    )
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "redis.key", "-out", "redis.csr"
    )
    (tmp_path / "san").write_text("subjectAltName=DNS:localhost\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "redis.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "san",
        "-out",
        "redis.pem",
    )
    return tmp_path


def _documented_url(scheme: str) -> str:
    """The REDIS_URL line docs/operating.md shows for `scheme`."""
    text = (ROOT / "docs/operating.md").read_text()
    found = re.findall(rf"^REDIS_URL=({scheme}://\S+)$", text, re.M)
    assert found, f"docs/operating.md shows no REDIS_URL={scheme}:// line"
    return found[0]


def _works_for_every_client(url: str) -> None:
    assert shared_cache.connect(url).ping()

    async def event_loop_clients():
        client = shared_cache.connect_async(url)
        assert await client.ping()
        await client.aclose()
        subscriber = shared_cache.subscriber(url)
        pubsub = subscriber.pubsub()
        await pubsub.subscribe("test:channel")
        await client.__class__.from_url(url).publish("test:channel", b"1")
        message = None
        for _ in range(50):
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.1)
            if message:
                break
        assert message and message["data"] == b"1"
        await pubsub.aclose()
        await subscriber.aclose()

    asyncio.run(event_loop_clients())
    # a task message through Celery's broker connection, as the web sends one and a worker takes it
    from config.celery import app

    with app.connection_for_write(url) as connection:
        queue = connection.SimpleQueue("test-tls-queue", serializer="json")
        queue.put({"task": "transcription.tasks.start_job", "args": [1]})
        message = queue.get(timeout=5)
        assert message.content_type == "application/json" and message.payload["args"] == [1]
        message.ack()
        queue.close()


def test_a_password_as_operating_md_shows_it(tmp_path):
    port = free_port()
    with running_redis(port, "--requirepass", "s3cret"):
        documented = urllib.parse.urlsplit(_documented_url("redis"))
        assert documented.password == "PASSWORD"
        _works_for_every_client(f"redis://:s3cret@127.0.0.1:{port}/0")
        with pytest.raises(redis.AuthenticationError):
            shared_cache.connect(f"redis://:wrong@127.0.0.1:{port}/0").ping()


def test_tls_as_operating_md_shows_it(certificates):
    port = free_port()
    tls = [
        "--tls-port", str(port), "--port", "0",
        "--tls-cert-file", str(certificates / "redis.pem"), "--tls-key-file", str(certificates / "redis.key"),
        "--tls-ca-cert-file", str(certificates / "ca.pem"), "--tls-auth-clients", "no",
        "--requirepass", "s3cret",
    ]  # fmt: skip
    documented = _documented_url("rediss")
    url = (
        documented.replace("PASSWORD", "s3cret")
        .replace("db-host:6380", f"localhost:{port}")
        .replace("/etc/ssl/private/redis-ca.pem", str(certificates / "ca.pem"))
    )
    assert url.startswith(f"rediss://:s3cret@localhost:{port}/0?"), documented
    with running_redis(free_port(), *tls):
        _works_for_every_client(url)
        # the server's certificate is checked: a client that does not know the CA is refused
        with pytest.raises(redis.ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            redis.Redis.from_url(url.split("&ssl_ca_certs")[0], socket_connect_timeout=2).ping()
        # and nothing is served in clear on that port
        with pytest.raises(redis.ConnectionError):
            redis.Redis(host="localhost", port=port, password="s3cret", socket_timeout=2).ping()
