"""A real S3-compatible server for the tests: moto's standalone server, in this process, on a free port.

`hold(fragment)` makes the next PUT whose body contains `fragment` wait (a write in flight) until
`release()`; the held request then fails without storing anything, as a write cut off by a
SIGKILL of its sender does.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterable
from typing import Any

import boto3
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

from tests.support.processes import free_port

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test-key", "AWS_SECRET_ACCESS_KEY": "test-secret", "AWS_REGION": "us-east-1"}
StartResponse = Callable[..., Any]


class S3Server:
    def __init__(self) -> None:
        self.port = free_port()
        self.held = threading.Event()
        self._release = threading.Event()
        self._hold: bytes | None = None
        self._lock = threading.Lock()
        self._server: BaseWSGIServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Server:
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            "127.0.0.1", self.port, self._gated(app), threaded=True, request_handler=MotoRequestHandler
        )
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()

    def hold(self, fragment: bytes) -> None:
        with self._lock:
            self._hold, self._release = fragment, threading.Event()
            self.held.clear()

    def release(self) -> None:
        self._release.set()

    def _gated(self, app: Any) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
        def gate(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
            caught = False
            if environ["REQUEST_METHOD"] == "PUT" and self._hold is not None:
                body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
                environ["wsgi.input"] = io.BytesIO(body)
                with self._lock:
                    caught = self._hold is not None and self._hold in body
                    if caught:
                        self._hold = None
            if caught:
                self.held.set()
                self._release.wait(timeout=300)
                start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
                return [b"held write dropped"]
            result: Iterable[bytes] = app(environ, start_response)
            return result

        return gate

    def boto(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=CREDENTIALS["AWS_REGION"],
        )

    def create_bucket(self, name: str) -> str:
        self.boto().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str) -> dict[str, int]:
        """key -> size of every object in the bucket."""
        found: dict[str, int] = {}
        for page in self.boto().get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                found[item["Key"]] = item["Size"]
        return found

    def object_body(self, bucket: str, key: str) -> bytes:
        body: bytes = self.boto().get_object(Bucket=bucket, Key=key)["Body"].read()
        return body
