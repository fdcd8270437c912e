"""A real S3-compatible server for the publish_to tests: moto's standalone server on
127.0.0.1, with a recording proxy in front of it that sees every request the crawler
makes (method, key, order) and can hold one, so a test can kill the crawler mid-upload.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.procs import missing

#: Credentials moto accepts: any. Set in the environment as a real deployment would.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing-key-id",
    "AWS_SECRET_ACCESS_KEY": "testing-secret-key-never-shown",
    "AWS_REGION": "us-east-1",
}
_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


@dataclass
class Proxy:
    """Forwards to moto; `requests` is every (method, path?query) in arrival order; a request
    `hold` matches waits (its body read, nothing forwarded), and `held` is set, until the
    process making it dies or `release` is set."""

    upstream: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    hold: Callable[[str, str], bool] | None = None
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)  # forward it after all
    down: bool = False  # answer every request 503

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        return app

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append((request.method, request.path_qs))
        if self.down:
            return web.Response(status=503, text="<Error><Code>SlowDown</Code></Error>")
        if self.hold is not None and self.hold(request.method, request.path_qs):
            self.held.set()
            for _ in range(12_000):  # 120 s at most: the test kills the client or releases it
                if self.release.is_set():
                    break
                await asyncio.sleep(0.01)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        async with (
            aiohttp.ClientSession(auto_decompress=False) as session,
            session.request(
                request.method, self.upstream + request.path_qs, headers=headers, data=body
            ) as resp,
        ):
            data = await resp.read()
            out = {k: v for k, v in resp.headers.items() if k.lower() not in _HOP}
            if request.method == "HEAD":  # the size obstore reads
                out["Content-Length"] = resp.headers.get("Content-Length", "0")
                response = web.Response(status=resp.status, headers=out)
                return response
            return web.Response(status=resp.status, body=data, headers=out)

    def puts(self) -> list[str]:
        """The keys PUT, in order, less the bucket."""
        return [path.split("/", 2)[2] for method, path in self.requests if method == "PUT"]


class S3:
    """moto's server, one per test session; a bucket per test."""

    def __init__(self) -> None:
        try:
            from moto.server import ThreadedMotoServer
        except ImportError:
            missing("moto[s3] with flask (the dev extra) for the object storage tests")
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def bucket(self) -> str:
        name = "sitemaps-" + uuid.uuid4().hex[:12]
        self.client().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        client = self.client()
        listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
        return {
            o["Key"][len(prefix) :]: client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
            for o in listed
        }

    def head(self, bucket: str, key: str) -> dict[str, Any]:
        return self.client().head_object(Bucket=bucket, Key=key)
