"""publish_to: copying the published set to object storage (S3 and S3-compatible stores,
Google Cloud Storage, Azure Blob Storage) once the local publish has succeeded.

obstore does the signing and the providers' credential chains (environment variables,
web identity, instance metadata); nothing secret is ever in our settings, and an error
line is redacted of the provider's secret variables all the same. Each request is made by
obstore once (its own retries are off) and retried here, with tenacity (crawler/shell/
retry.py), a bounded number of times with jittered backoff, so that one policy and one
line per retry cover every request. obstore's blocking calls are used, inside coroutines
that only tenacity's backoff awaits: its async calls leave tokio threads calling back into
Python, and 15 of 40 processes measured were aborted (SIGABRT) at exit; none with these.
A SIGTERM is acted on when the request in flight returns (a request has REQUEST_TIMEOUT).

What is sent, in what order, is crawler/core/uploads.py's plan: a file whose bytes the
bucket holds already (the same size, and the SHA-256 this tool stored in the object's
metadata) is not sent again; the index goes after every file it names; files this tool
wrote that the set no longer has are deleted last. Every PUT is a single request, which
an object store applies whole or not at all: a run killed at any point leaves the bucket
with an index whose files are all there, and the next run completes the copy.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from crawler.core.access import redact
from crawler.core.uploads import (
    DIGEST_KEY,
    DROPPED,
    Found,
    LocalFile,
    Target,
    dropped_names,
    dropped_text,
    headers,
    parse_target,
    plan,
    worth_reading,
)
from crawler.errors import ConfigError, UploadError
from crawler.shell import interrupts
from crawler.shell.retry import RetryPolicy, fetch_with_retries

if TYPE_CHECKING:
    from obstore.store import ObjectStore

T = TypeVar("T")

#: Tries per request: the first, then four more over about 8 s at most (a store that
#: restarts, a 503 "slow down"); longer outages fail the night with exit 7, and the next
#: night uploads what this one could not.
POLICY: Final = RetryPolicy(retries=4, base=0.5, max_backoff=8.0)
#: One request may take this long: a 50 MB part over a slow link fits.
REQUEST_TIMEOUT: Final = timedelta(seconds=300)
CONNECT_TIMEOUT: Final = timedelta(seconds=10)
#: The providers' variables that hold secrets: never in an error line, whatever obstore
#: puts in its messages.
SECRET_VARIABLES: Final = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_CLIENT_SECRET",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
)
#: Where obstore finds AWS credentials in the environment; without any of them it asks the
#: EC2 instance metadata service (an instance role), unless AWS_EC2_METADATA_DISABLED=true.
AWS_CREDENTIAL_VARIABLES: Final = (
    "AWS_ACCESS_KEY_ID",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)
NO_AWS_CREDENTIALS: Final = (
    "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
    "AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, or the container credentials), or run "
    "with an instance role"
)
_METADATA_SERVICE = "169.254.169.254"
_XML_BODY = re.compile(r":\s*<.*$")  # an error document after the status: its code is kept
_STATUS = re.compile(r"status code: (\d{3})")
_ERROR_CODE = re.compile(r"<Code>([^<]{1,80})</Code>(?:\s*<Message>([^<]{0,200})</Message>)?")
_SAS_SIGNATURE = re.compile(r"(?i)\b(sig|x-amz-signature|x-amz-credential)=[^&\s\"']+")


@dataclass(frozen=True, slots=True)
class Uploaded:
    """What a night sent: files uploaded (in order), left as they were, deleted."""

    target: str
    uploaded: tuple[str, ...]
    kept: tuple[str, ...]
    deleted: tuple[str, ...]

    def figures(self) -> dict[str, Any]:
        return {
            "to": self.target,
            "uploaded": list(self.uploaded),
            "unchanged": len(self.kept),
            "deleted": list(self.deleted),
        }

    def summary(self) -> str:
        return (
            f"uploaded {len(self.uploaded)} of {len(self.uploaded) + len(self.kept)} files to "
            f"{self.target} ({len(self.kept)} unchanged, {len(self.deleted)} deleted)"
        )


class Uploader:
    """The bucket a run publishes to, opened before the crawl so that a store obstore
    cannot build (no Azure account, a credentials file that is not there) fails at once."""

    def __init__(
        self, publish_to: str, endpoint: str | None = None, region: str | None = None
    ) -> None:
        self.target: Target = parse_target(publish_to)
        self.store: ObjectStore = _open(self.target, endpoint, region)

    def run(self, files: Sequence[Path], log: Callable[[str], None]) -> Uploaded:
        """Upload `files` (the published set, the entry point last). SIGTERM and SIGINT
        stop it once the request in flight returns (KeyboardInterrupt); a failure after the
        retries is an UploadError naming the object and the reason."""
        return interrupts.run(self.upload(files, log))

    async def upload(self, files: Sequence[Path], log: Callable[[str], None]) -> Uploaded:
        import obstore

        store, target = self.store, self.target
        local = [_local(path) for path in files]
        listing = await self._retried(lambda: obstore.list_with_delimiter(store), target.url, log)
        found = {obj["path"]: Found(obj["size"]) for obj in listing["objects"]}
        for name in worth_reading(local, found):
            found[name] = Found(found[name].size, await self._digest(name, log))
        before = await self._dropped_before(log) if DROPPED in found else frozenset()
        steps = plan(local, found, before)
        paths = {path.name: path for path in files}
        entry = files[-1].name if files else None
        for name in steps.puts:
            await self._put(paths[name], log, entry=name == entry)
        if steps.deletes:
            await self._retried(
                lambda: obstore.delete(store, list(steps.deletes)),
                target.key(steps.deletes[0]),
                log,
            )
        if steps.dropped or DROPPED in found:  # the next run deletes these
            body = dropped_text(steps.dropped)
            await self._retried(
                lambda: obstore.put(store, DROPPED, body, use_multipart=False),
                target.key(DROPPED),
                log,
            )
        return Uploaded(target.url, steps.puts, steps.kept, steps.deletes)

    async def _dropped_before(self, log: Callable[[str], None]) -> frozenset[str]:
        """The files the previous run dropped (its DROPPED object): deleted by this one."""
        import obstore

        try:
            result = await self._retried(
                lambda: obstore.get(self.store, DROPPED),
                self.target.key(DROPPED),
                log,
                missing_ok=True,
            )
        except _NotThere:
            return frozenset()
        return dropped_names(bytes(result.bytes()))

    async def _put(self, path: Path, log: Callable[[str], None], *, entry: bool) -> None:
        """One PUT, never multipart: applied whole or not at all, nothing left half-done.
        The digest stored is of the bytes sent, read once: a run that replaces the folder
        since the plan's hashing cannot leave an object whose digest is another's."""
        import obstore

        body = path.read_bytes()  # a part is at most 50 MB (the protocol's limit)
        sha256 = hashlib.sha256(body).hexdigest()
        attributes: Any = {**headers(path.name, entry=entry), DIGEST_KEY: sha256}
        await self._retried(
            lambda: obstore.put(
                self.store, path.name, body, attributes=attributes, use_multipart=False
            ),
            self.target.key(path.name),
            log,
        )

    async def _digest(self, name: str, log: Callable[[str], None]) -> str | None:
        """The SHA-256 this tool stored with an object; None for one it did not write (or
        one deleted since the listing)."""
        import obstore

        try:
            result = await self._retried(
                lambda: obstore.get(self.store, name, options={"head": True}),
                self.target.key(name),
                log,
                missing_ok=True,
            )
        except _NotThere:
            return None
        return result.attributes.get(DIGEST_KEY)

    async def _retried(
        self,
        request: Callable[[], T],
        key: str,
        log: Callable[[str], None],
        *,
        missing_ok: bool = False,
    ) -> T:
        """`missing_ok`: a 404 is _NotThere (an object gone), not a failure (a bucket gone)."""
        from obstore.exceptions import GenericError, NotFoundError

        async def attempt() -> T:
            # the loop's turn: a SIGTERM received during the last request cancels here (a
            # sleep(0) is too short for the loop to reach the signal's callback, measured)
            await asyncio.sleep(0.001)
            try:
                return request()
            except GenericError as exc:  # a 4xx will not change on a second try
                if _refused(exc):
                    raise _Refused(exc) from None
                raise

        try:
            result, notes = await fetch_with_retries(
                attempt,
                POLICY,
                status_of=lambda _: 200,  # an answer is a success: failures are raised
                retry_after_of=lambda _: None,
                retry_on=(GenericError, ConnectionError, TimeoutError),
            )
        except _Refused as refused:
            raise UploadError(f"the upload to {key} failed: {_reason(refused.exc)}") from None
        except (NotFoundError, FileNotFoundError) as exc:  # obstore raises the builtin
            if missing_ok:
                raise _NotThere from None
            raise UploadError(f"the upload to {key} failed: {_reason(exc)}") from None
        except Exception as exc:
            raise UploadError(f"the upload to {key} failed: {_reason(exc)}") from None
        for note in notes:
            log(f"publish_to: {key}: {_reason_text(note)}")
        return result


class _NotThere(Exception):
    """An object listed a moment ago and gone now."""


class _Refused(Exception):
    """A 4xx answer (no such bucket, access denied, a bad request): not retried."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


def _refused(exc: Exception) -> bool:
    """obstore reports a status only in its message: 4xx but 408 and 429 (try again)."""
    status = _STATUS.search(str(exc))
    return (
        status is not None
        and status.group(1).startswith("4")
        and status.group(1)
        not in (
            "408",
            "429",
        )
    )


def _open(target: Target, endpoint: str | None, region: str | None) -> ObjectStore:
    try:
        from obstore.store import from_url
    except ImportError:  # pragma: no cover - a dependency; an install without it is broken
        raise ConfigError("publish_to needs obstore: pip install obstore") from None
    options: Any = {"timeout": REQUEST_TIMEOUT, "connect_timeout": CONNECT_TIMEOUT}
    config: Any = {}
    if endpoint is not None:
        config["endpoint"] = endpoint
        options["allow_http"] = endpoint.startswith("http://")
    if region is not None:
        config["region"] = region
    if target.scheme == "s3" and _no_aws_credentials():
        raise ConfigError(
            f"publish_to {target.url}: {NO_AWS_CREDENTIALS} (AWS_EC2_METADATA_DISABLED is set)"
        )
    retries: Any = {"max_retries": 0}  # ours, with tenacity: one policy, logged
    try:
        return from_url(
            target.url, config=config or None, client_options=options, retry_config=retries
        )
    except Exception as exc:  # obstore's own: a missing account, an unreadable key file
        raise ConfigError(f"publish_to {target.url}: {_reason(exc)}") from None


def _no_aws_credentials() -> bool:
    """None in the environment, and the instance metadata service (a role) disabled: the
    one case known to fail before a request is made."""
    return not any(os.environ.get(v) for v in AWS_CREDENTIAL_VARIABLES) and (
        os.environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true"
    )


def _local(path: Path) -> LocalFile:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return LocalFile(path.name, size, digest.hexdigest())


def _reason(exc: BaseException) -> str:
    """obstore's message, first line (its debug dump follows), less any secret."""
    text = str(exc).strip() or type(exc).__name__
    return _reason_text(text)


def _reason_text(text: str) -> str:
    if _METADATA_SERVICE in text:  # no credentials in the environment, and no instance role
        return f"{NO_AWS_CREDENTIALS}; the EC2 instance metadata service did not answer"
    line = text.strip().splitlines()[0] if text.strip() else text
    line = _XML_BODY.sub("", line)
    if (code := _ERROR_CODE.search(text)) is not None:  # the store's own words (S3's XML)
        line += f" ({code.group(1)}: {code.group(2)})" if code.group(2) else f" ({code.group(1)})"
    secrets = [os.environ[name] for name in SECRET_VARIABLES if os.environ.get(name)]
    line = _SAS_SIGNATURE.sub(lambda m: m.group(1) + "=(hidden)", redact(line, secrets))
    return line if len(line) <= 400 else line[:397] + "..."
