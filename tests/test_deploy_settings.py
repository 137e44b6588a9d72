"""SECRET_KEY and the production security settings: the service refuses to start without a key
of its own, `make run` keeps a random one under var/, and `manage.py check --deploy` is clean
with the settings docs/operating.md's "Production security" documents. Each check runs manage.py as a
separate process with exactly the environment it names."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The production settings docs/operating.md's "Production security" section documents, as an operator sets them.
PRODUCTION = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "transcribe.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://transcribe.example.com",
    "TRUST_PROXY_HEADERS": "true",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SECURE_COOKIES": "true",
}


def manage(tmp_path, *args: str, **environment: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in {"SECRET_KEY", *PRODUCTION}}
    env.update(DATA_DIR=str(tmp_path), **environment)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_without_a_secret_key_the_service_refuses_to_start_and_says_why(tmp_path):
    for command in ("check", "migrate"):
        result = manage(tmp_path, command)
        assert result.returncode != 0
        assert "ImproperlyConfigured: SECRET_KEY is not set." in result.stderr
        assert "var/secret-key" in result.stderr


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    key = "prod-" + os.urandom(48).hex()
    development = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=key)
    assert development.returncode != 0, "without them, --deploy flags HSTS, SSL redirect and cookies"
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in development.stderr

    production = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=key, **PRODUCTION)
    assert production.returncode == 0, production.stderr
    assert "no issues" in production.stdout


def test_make_run_makes_a_random_key_once_keeps_it_private_and_reuses_it(tmp_path):
    def secret_key() -> str:
        env = {**os.environ, "DATA_DIR": str(tmp_path)}
        return subprocess.run([ROOT / "bin" / "secret-key"], env=env, capture_output=True, text=True, check=True).stdout

    first = secret_key().strip()
    assert len(first) >= 64
    key_file = tmp_path / "secret-key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert secret_key().strip() == first

    other = tmp_path / "other"
    other.mkdir()
    env = {**os.environ, "DATA_DIR": str(other)}
    again = subprocess.run([ROOT / "bin" / "secret-key"], env=env, capture_output=True, text=True, check=True).stdout
    assert again.strip() != first, "each installation gets its own"
