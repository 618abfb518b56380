"""The clouds' own credentials: AWS SigV4 signing (Bedrock) and Google's OAuth tokens
from application default credentials (Vertex AI), each as an `httpx.Auth` every request
of a stream client goes through.

Why the vendors' libraries: SigV4's canonical request (the path encoded twice, headers
trimmed and sorted, the payload's digest) and the credential chains (environment, shared
files and profiles, SSO, assumed roles, instance and container roles; gcloud's user
login, service-account keys, workload identity, the metadata server) are what botocore
and google-auth are for. Neither is imported until a run asks for its API (the `aws` and
`google` extras).

Credentials come from those chains only, never from a flag, and go nowhere but into a
request's headers: not into run.json (`describe` says which source, never a value), not
into a record or a log (`secret_forms` gives `Target.redact` what to blank if a vendor
echoes one), not across a pickle (a Ray actor resolves its own).

Signing happens inside httpx's send, before the request's first byte leaves: the send
stamp (`evalkit.probe.wire.stamping`), and so t0, is after it. A refresh (an assumed role's
STS call, an OAuth token's) runs in a thread, so no stream's reads wait for it.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any
from urllib.parse import urlsplit

import httpx

from evalkit.errors import UsageError
from evalkit.sanitize import clean

#: auth styles that are no header of a key (`evalkit.probe.apis.base.AUTH_STYLES`): a signer
CLOUD_AUTHS = ("sigv4", "google-adc")
#: a region of AWS: us-east-1, eu-central-2, us-gov-west-1, cn-north-1, ap-southeast-7
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
#: bedrock-runtime[-fips].REGION.amazonaws.com[.cn], and a VPC endpoint's
#: vpce-….bedrock-runtime.REGION.vpce.amazonaws.com
_BEDROCK_HOST = re.compile(r"(?:^|\.)bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.(?:vpce\.)?"
                           r"amazonaws\.com(?:\.cn)?$")
#: the OAuth scope Vertex AI's calls take
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"


def url_region(base_url: str) -> str | None:
    """The region a Bedrock runtime URL names (None: a proxy, a local stand-in)."""
    found = _BEDROCK_HOST.search((urlsplit(base_url).hostname or "").lower())
    return found.group(1) if found else None


def _chain(resolve: Callable[[], Any]) -> Any:
    """`resolve()` of botocore's credential chain; its own errors (a profile that is not
    there, an SSO session expired, a role it cannot assume) a usage error naming the kind
    and what botocore said (names and paths, never a key), before the run starts."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return resolve()
    except (BotoCoreError, ClientError) as exc:
        raise UsageError(f"the AWS credential chain failed: {type(exc).__name__}: "
                         f"{clean(str(exc), 300)}") from None


class SigV4(httpx.Auth):
    """Signs each request with SigV4 (botocore's signer) for one region and service."""

    requires_request_body = True

    def __init__(self, base_url: str, service: str = "bedrock", profile: str | None = None
                 ) -> None:
        self.service, self.profile = service, profile
        self.base_url = base_url
        self._credentials: Any = None
        self.region = url_region(base_url) or self._configured_region()
        if self.region is None:
            raise UsageError("no AWS region: --base-url names none (bedrock-runtime.REGION."
                             "amazonaws.com) and neither AWS_REGION, AWS_DEFAULT_REGION nor the "
                             "profile sets one")
        if _REGION.fullmatch(self.region) is None:
            raise UsageError(f"{clean(self.region, 40)!r} is no AWS region (e.g. us-east-1): check "
                             "AWS_REGION, the profile's region or --base-url")

    def _session(self) -> Any:
        try:
            import botocore.session
        except ImportError:
            raise UsageError("--api bedrock-* needs botocore: pip install 'evalkit[aws]'"
                             ) from None
        return botocore.session.Session(profile=self.profile)

    def _configured_region(self) -> str | None:
        """AWS_REGION (the newer SDKs' variable), else botocore's: AWS_DEFAULT_REGION, the
        profile's region."""
        region = os.environ.get("AWS_REGION") or _chain(
            lambda: self._session().get_config_variable("region"))
        return str(region) if region else None

    def credentials(self) -> Any:
        """The chain's credentials (resolved once; refreshable ones refresh themselves)."""
        if self._credentials is None:
            found = _chain(lambda: self._session().get_credentials())
            if found is None:
                raise UsageError(
                    "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and "
                    "AWS_SESSION_TOKEN), or AWS_PROFILE, or run where a role provides them; "
                    "evalkit takes them from the standard chain only, never from a flag")
            self._credentials = found
        return self._credentials

    def describe(self) -> dict[str, Any]:
        """Where the credentials came from and what is signed for: no value."""
        method = getattr(self._credentials, "method", None)
        return {"kind": "aws-sigv4", "region": self.region, "service": self.service,
                "source": str(method) if method else "AWS credential chain"}

    def secret_forms(self) -> list[str]:
        """The values a vendor's echo must never show (`Target.redact`)."""
        creds = self._credentials
        if creds is None:
            return []
        frozen = creds.get_frozen_credentials()
        return [v for v in (frozen.secret_key, frozen.token, frozen.access_key) if v]

    def sign(self, request: httpx.Request, frozen: Any) -> httpx.Request:
        """`request` with SigV4's headers: X-Amz-Date, X-Amz-Security-Token, Authorization
        over every header it carries (botocore leaves out user-agent and the like)."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        aws = AWSRequest(method=request.method, url=str(request.url), data=request.content,
                         headers=dict(request.headers.items()))
        SigV4Auth(frozen, self.service, self.region).add_auth(aws)
        for name in ("X-Amz-Date", "X-Amz-Security-Token", "Authorization"):
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value
        return request

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, Any, None]:
        """Sign (a blocking client's path)."""
        yield self.sign(request, self.credentials().get_frozen_credentials())

    async def async_auth_flow(self, request: httpx.Request
                              ) -> AsyncGenerator[httpx.Request, Any]:
        """Sign; a refresh the credentials need runs in a thread."""
        try:  # (a Ray actor resolves its own chain here, on its first request)
            creds = self.credentials()
            refresh = getattr(creds, "refresh_needed", None)
            if refresh is not None and refresh():
                frozen = await asyncio.to_thread(creds.get_frozen_credentials)
            else:
                frozen = creds.get_frozen_credentials()
        except UsageError as exc:  # no chain where this runs: said as it was
            raise httpx.RequestError(str(exc), request=request) from None
        except Exception as exc:  # botocore's own errors: this request fails, not the run
            raise httpx.RequestError(f"AWS credentials could not be refreshed: "
                                     f"{type(exc).__name__}", request=request) from None
        yield self.sign(request, frozen)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_credentials": None}  # a Ray actor resolves its own


class GoogleADC(httpx.Auth):
    """A bearer token from Google's application default credentials (google-auth)."""

    def __init__(self) -> None:
        self._credentials: Any = None
        self._lock = threading.Lock()

    def credentials(self) -> Any:
        """The ADC credentials (found once: gcloud's login, a key file, the metadata server)."""
        if self._credentials is None:
            try:
                import google.auth
                from google.auth.exceptions import DefaultCredentialsError
            except ImportError:
                raise UsageError("Vertex AI needs google-auth: pip install 'evalkit[google]'"
                                 ) from None
            try:
                self._credentials, _project = google.auth.default(scopes=[CLOUD_PLATFORM])
            except DefaultCredentialsError as exc:
                raise UsageError(f"no Google application default credentials: run `gcloud "
                                 f"auth application-default login` or set "
                                 f"GOOGLE_APPLICATION_CREDENTIALS ({clean(str(exc), 160)})"
                                 ) from None
        return self._credentials

    def refresh(self) -> None:
        """Fetch a token if there is none or it is about to expire (blocking)."""
        import requests
        from google.auth.exceptions import GoogleAuthError
        from google.auth.transport.requests import Request

        creds = self.credentials()
        with self._lock:  # streams that found it due together: one refresh
            if creds.valid:
                return
            try:  # a session of its own, closed: no connection left to the token server
                with requests.Session() as session:
                    creds.refresh(Request(session))
            except GoogleAuthError as exc:  # refused, or the token server out of reach
                raise UsageError(f"Google credentials could not be refreshed: "
                                 f"{clean(str(exc), 200)}") from None

    def describe(self) -> dict[str, Any]:
        """What kind of credentials: no value."""
        kind = type(self._credentials).__module__ if self._credentials is not None else None
        return {"kind": "google-adc", "source": kind or "application default credentials"}

    def secret_forms(self) -> list[str]:
        """The token a vendor's echo must never show."""
        token = getattr(self._credentials, "token", None)
        return [token] if isinstance(token, str) and token else []

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, Any, None]:
        """Bearer token (a blocking client's path)."""
        self.refresh()
        request.headers["authorization"] = f"Bearer {self.credentials().token}"
        yield request

    async def async_auth_flow(self, request: httpx.Request
                              ) -> AsyncGenerator[httpx.Request, Any]:
        """Bearer token; a refresh, when it is due, in a thread (one at a time)."""
        creds = self.credentials()
        if not creds.valid:
            try:
                await asyncio.to_thread(self.refresh)
            except UsageError as exc:  # this request fails, not the run
                raise httpx.RequestError(str(exc), request=request) from None
        request.headers["authorization"] = f"Bearer {creds.token}"
        yield request

    def __getstate__(self) -> dict[str, Any]:
        return {}  # a Ray actor finds its own

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]


def cloud_auth(style: str, base_url: str) -> SigV4 | GoogleADC:
    """The signer of a cloud auth style (`CLOUD_AUTHS`), its credentials resolved now: a
    missing chain or region is a usage error before the run starts."""
    auth: SigV4 | GoogleADC = SigV4(base_url) if style == "sigv4" else GoogleADC()
    if isinstance(auth, SigV4):
        auth.credentials()
    else:
        auth.refresh()
    return auth
