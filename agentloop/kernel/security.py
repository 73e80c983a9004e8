"""Authentication of the calls a server accepts: bearer tokens for users, a token between services.

Gateway authentication: a client sends `authorization: Bearer <token>`; the
token maps to exactly one user, and that user is the only one whose threads,
runs and memories the call may touch. Tokens come from a configured set
(AGENTLOOP_AUTH_TOKENS / AGENTLOOP_AUTH_TOKENS_FILE) or a pluggable verifier
(AGENTLOOP_AUTH_VERIFIER=module:function, called with the token and returning
the user id or None). With none configured the gateway trusts `user_id` in
requests (for a private network or a mesh that authenticates for it).

Service authentication: the Reasoner and the ToolService serve only the
gateway. With AGENTLOOP_SERVICE_TOKEN set they refuse every call (but health
and reflection) that does not carry `authorization: Bearer <that token>`, and
the gateway sends it on every call to them. Mutual TLS (below) is the
alternative, or an addition: a client certificate signed by the configured CA.

TLS (certificates for serving and calling) is agentloop.kernel.tls: a client needs it
without the servers' authentication.
"""

from __future__ import annotations

import contextlib
import contextvars
import hmac
import importlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from agentloop.kernel.errors import AgentloopError, PermissionDenied
from agentloop.kernel.handlers import AroundInterceptor, call_editors, with_metadata
from agentloop.kernel.settings import AuthSettings

_AUTH_USER: contextvars.ContextVar[str | None] = contextvars.ContextVar("agentloop_auth_user", default=None)
# Health checks and reflection stay open so load balancers and grpcurl work without a token.
_OPEN_SERVICES = ("/grpc.health.v1.Health/", "/grpc.reflection.")


class Unauthenticated(AgentloopError, code=grpc.StatusCode.UNAUTHENTICATED):
    """No valid bearer token."""


SERVICE_CALLER = "agentloop-gateway"
"""The identity a call authenticated by the service token acts as."""


def service_authenticator(token: str) -> Authenticator | None:
    """An authenticator that accepts exactly the service token, or None (open) when there is none."""
    return Authenticator({token: SERVICE_CALLER}) if token else None


def bearer_interceptors(token: str) -> list[Any]:
    """Client interceptors that send ``token`` as a bearer token on every call (none without a token).

    Unary-unary and unary-stream, the two kinds the services' RPCs use (a
    channel files each interceptor under one kind only, hence two).
    """
    if not token:
        return []
    header = [("authorization", f"Bearer {token}")]
    return call_editors(lambda details: with_metadata(details, header))


Verifier = Callable[[str], "str | Awaitable[str | None] | None"]


@dataclass
class Authenticator:
    """Maps bearer tokens to users; disabled when it has neither tokens nor a verifier."""

    tokens: dict[str, str] = field(default_factory=dict)
    verifier: Verifier | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.tokens) or self.verifier is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Authenticator:
        """The authenticator the environment configures (agentloop.kernel.settings.AuthSettings)."""
        return cls.from_settings(AuthSettings.from_env(env))

    @classmethod
    def from_settings(cls, settings: AuthSettings) -> Authenticator:
        """Tokens from the list and the file, and the verifier loaded; ValueError for a bad entry."""
        tokens = _parse_tokens(settings.tokens, "AGENTLOOP_AUTH_TOKENS")
        path = settings.tokens_file
        if path:
            tokens.update(_parse_tokens(Path(path).read_text().replace("\n", ","), path))
        verifier: Verifier | None = None
        spec = settings.verifier
        if spec:
            module, _, name = spec.partition(":")
            if not name:
                raise ValueError(f"AGENTLOOP_AUTH_VERIFIER={spec!r} must be module:function")
            verifier = getattr(importlib.import_module(module), name)
        return cls(tokens, verifier)

    async def user_for(self, token: str) -> str | None:
        """The user a token belongs to, or None (constant-time comparison against configured tokens)."""
        for known, user in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                return user
        if self.verifier is not None:
            result = self.verifier(token)
            found: str | None = await result if inspect.isawaitable(result) else result
            return found or None
        return None


def _parse_tokens(text: str, where: str) -> dict[str, str]:
    tokens: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item or item.startswith("#"):
            continue
        token, sep, user = item.partition("=")
        if not sep or not token.strip() or not user.strip():
            raise ValueError(f"{where}: entries must look like token=user_id")
        tokens[token.strip()] = user.strip()
    return tokens


def authenticated_user() -> str | None:
    """The bearer token's user of the call being served; None without authentication."""
    return _AUTH_USER.get()


def effective_user(requested: str) -> str:
    """The user a request acts as: the token's user when authenticated, else the request's user_id.

    An authenticated caller naming another user is refused rather than
    silently rewritten, so a client bug cannot read someone else's data.
    """
    authenticated = _AUTH_USER.get()
    if authenticated is None:
        return requested
    if requested and requested != authenticated:
        raise PermissionDenied("user_id: the bearer token belongs to another user")
    return authenticated


class AuthInterceptor(AroundInterceptor):
    """Checks the bearer token of every call (but health/reflection) and binds its user to the call."""

    def __init__(self, authenticator: Authenticator) -> None:
        self._auth = authenticator

    async def _authenticate(self, context: grpc.aio.ServicerContext) -> str:
        header = dict(context.invocation_metadata() or ()).get("authorization", "")
        scheme, _, token = str(header).partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("missing bearer token (metadata 'authorization: Bearer <token>')")
        user = await self._auth.user_for(token.strip())
        if user is None:
            raise Unauthenticated("invalid bearer token")
        return user

    def applies(self, method: str) -> bool:
        return self._auth.enabled and not method.startswith(_OPEN_SERVICES)

    @contextlib.asynccontextmanager
    async def around(
        self, details: grpc.HandlerCallDetails, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[None]:
        """The call runs as the token's user (effective_user reads it)."""
        token = _AUTH_USER.set(await self._authenticate(context))
        try:
            yield
        finally:
            _AUTH_USER.reset(token)
