"""Google's Search Console API and Bing Webmaster Tools' API, imitated on 127.0.0.1 from their
documentation: the OAuth2 token endpoint taking the JWT-bearer grant (its signature checked
with the service account's public key), the Sitemaps API (webmasters/v3: PUT to submit, GET
for the Sitemap resource) behind `Authorization: Bearer`, Bing's JSON API (SubmitFeed,
GetFeeds) behind `?apikey=`, and their error answers. Each records what it was sent.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

SCOPE = "https://www.googleapis.com/auth/webmasters"
ACCOUNT = "crawler@sitemaps-test.iam.gserviceaccount.com"
TOKEN = "ya29.token-secret-for-tests"
BING_KEY = "bing-api-key-secret-0123456789"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: The assertion's audience: Google's token endpoint, whatever token_uri the key file names
AUDIENCE = "https://oauth2.googleapis.com/token"


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


@dataclass
class Engines:
    """Both engines' APIs in one app. `google` maps a property to its sitemaps (a Sitemap
    resource each); a property not in it is one the account has no permission for (403).
    `bing` maps a verified site to its feeds. `fail`: statuses to answer the next API
    requests with (429 and 5xx with Retry-After: 0, so that a retry costs no time)."""

    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    google: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    bing: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    fail: list[int] = field(default_factory=list)
    revoked: bool = False
    delay: float = 0.0  # seconds each Sitemaps API answer waits (a signal sent meanwhile)
    requests: list[dict[str, Any]] = field(default_factory=list)
    grants: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/token", self._token)
        app.router.add_route("*", "/webmasters/v3/sites/{tail:.*}", self._sitemaps)
        app.router.add_route("*", "/webmaster/api.svc/json/{method}", self._bing)
        return app

    def key_file(self, folder: Path, base: str) -> Path:
        pem = self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        path = folder / "service-account.json"
        path.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": "sitemaps-test",
                    "private_key_id": "0123456789abcdef",
                    "private_key": pem,
                    "client_email": ACCOUNT,
                    "client_id": "1234567890",
                    "token_uri": base + "/token",
                }
            )
        )
        return path

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        header, claims, signature = str(form.get("assertion", "")).split(".")
        self.key.public_key().verify(
            _b64(signature),
            f"{header}.{claims}".encode(),
            padding.PKCS1v15(),
            hashes.SHA256(),
        )  # raises: a 500, which the test sees
        grant = {"grant_type": form.get("grant_type"), **json.loads(_b64(claims))}
        grant["alg"] = json.loads(_b64(header))["alg"]
        self.grants.append(grant)
        if self.revoked:
            return web.json_response(
                {"error": "invalid_grant", "error_description": "Invalid JWT Signature."},
                status=400,
            )
        if grant["grant_type"] != GRANT or grant["aud"] != AUDIENCE:
            return web.json_response({"error": "invalid_request"}, status=400)
        return web.json_response(
            {"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"}
        )

    def _failing(self) -> web.Response | None:
        if not self.fail:
            return None
        status = self.fail.pop(0)
        return web.json_response(
            {"error": {"code": status, "message": "Quota exceeded or backend error."}},
            status=status,
            headers={"Retry-After": "0"},
        )

    async def _sitemaps(self, request: web.Request) -> web.Response:
        body = await request.read()
        rest = request.raw_path.removeprefix("/webmasters/v3/sites/")
        site_part, _, feed_part = rest.partition("/sitemaps/")
        site, feed = unquote(site_part), unquote(feed_part)
        self.requests.append(
            {
                "method": request.method,
                "raw_path": request.raw_path,
                "site": site,
                "feed": feed,
                "authorization": request.headers.get("Authorization"),
                "body": body,
            }
        )
        await asyncio.sleep(self.delay)
        if (failed := self._failing()) is not None:
            return failed
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _google_error(401, "Request had invalid authentication credentials.")
        if site not in self.google:
            return _google_error(
                403,
                f"User does not have sufficient permission for site '{site}'. See also: "
                "https://support.google.com/webmasters/answer/2451999.",
            )
        sitemaps = self.google[site]
        if request.method == "PUT":
            resource = sitemaps.setdefault(feed, {"path": feed, "isPending": True})
            resource["lastSubmitted"] = "2026-11-26T03:00:00.000Z"
            return web.Response(status=200)
        if request.method == "GET":
            if feed not in sitemaps:
                return _google_error(404, "Requested entity was not found.")
            return web.json_response(sitemaps[feed])
        return _google_error(405, "Method not allowed.")

    async def _bing(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        body = await request.read()
        self.requests.append(
            {
                "method": request.method,
                "bing": method,
                "query": dict(request.query),
                "content_type": request.headers.get("Content-Type"),
                "body": body,
            }
        )
        if (failed := self._failing()) is not None:
            return failed
        if request.query.get("apikey") != BING_KEY:
            return _bing_fault(3, "ERROR!!! InvalidApiKey")
        if method == "SubmitFeed" and request.method == "POST":
            data = json.loads(body)
            if data["siteUrl"] not in self.bing:
                return _bing_fault(14, "ERROR!!! NotAuthorized")
            self.bing[data["siteUrl"]].append(
                {
                    "__type": "Feed:#Microsoft.Bing.Webmaster.Api",
                    "Compressed": False,
                    "FileSize": 0,
                    "LastCrawled": "/Date(-62135568000000)/",
                    "Status": "Pending",
                    "Submitted": "/Date(1764126000000-0800)/",
                    "Type": "Sitemap",
                    "Url": data["feedUrl"],
                    "UrlCount": 0,
                }
            )
            return web.json_response({"d": None})
        if method == "GetFeeds" and request.method == "GET":
            site = request.query.get("siteUrl", "")
            if site not in self.bing:
                return _bing_fault(14, "ERROR!!! NotAuthorized")
            return web.json_response({"d": self.bing[site]})
        return _bing_fault(8, "ERROR!!! InvalidParameter")


def _google_error(status: int, message: str) -> web.Response:
    reason = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
    return web.json_response(
        {
            "error": {
                "code": status,
                "message": message,
                "errors": [{"message": message, "domain": "global", "reason": "forbidden"}],
                "status": reason.get(status, "INVALID_ARGUMENT"),
            }
        },
        status=status,
    )


def _bing_fault(code: int, message: str) -> web.Response:
    return web.json_response({"ErrorCode": code, "Message": message}, status=400)
