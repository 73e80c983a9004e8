"""What a model endpoint's failure means: the status the caller gets, and whether trying again may help.

One owner for the rule, whichever way the failure arrived — an HTTP error status (its body a JSON
object, a JSON array as Gemini sends, plain text or an HTML page from a proxy), an error chunk or
``error`` event inside a 200 stream, a connection that failed, or an answer that cannot be read:

- 400, 413 and 422 are INVALID_ARGUMENT; 401 and 404 (and the other 4xx) FAILED_PRECONDITION,
  they are the operator's to fix; 403 PERMISSION_DENIED. None is retried, and the provider's own
  message is kept. A prompt too long for the model's context is named as such (reason
  CONTEXT_LENGTH_EXCEEDED) so a caller can shorten it;
- 429 is RESOURCE_EXHAUSTED with RetryInfo from the endpoint's Retry-After; it is retried when the
  wait fits in the call, unless the quota is spent rather than the rate;
- 408, 409, 5xx, a refused or dropped connection are retried, then UNAVAILABLE;
- an answer that cannot be read is UNAVAILABLE with reason MODEL_ANSWER_MALFORMED; text that is
  not JSON is tried again (a body cut short), JSON of a shape nobody reads is not (a server that
  sends a shape once sends it again).
"""

from __future__ import annotations

import email.utils
import html
import json
import re
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import openai

from agentloop.kernel.errors import (
    AgentloopError,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    Reason,
    ResourceExhausted,
    Unavailable,
)
from reasoner_svc.assembly import EndpointError, MalformedAnswer, endpoint_error

CONTEXT_LENGTH_EXCEEDED = Reason.CONTEXT_LENGTH_EXCEEDED
"""ErrorInfo reason of a request whose conversation does not fit the model's context window."""
MODEL_ANSWER_MALFORMED = Reason.MODEL_ANSWER_MALFORMED
"""ErrorInfo reason of an answer the Reasoner could not read."""

_MAX_MESSAGE_CHARS = 1000
_CONTEXT_WORDS = re.compile(
    r"context[ _]length|context[ _]window|context limit|maximum context|prompt is too long|too many tokens|"
    r"input is too long|exceeds? the (?:model'?s? )?(?:maximum|context|token limit)|"
    r"reduce the length of the messages|input tokens exceed",
    re.IGNORECASE,
)
_CODE_STATUS = {
    "invalid_request_error": 400,
    "bad_request": 400,
    "invalid_argument": 400,
    "context_length_exceeded": 400,
    "string_above_max_length": 400,
    "authentication_error": 401,
    "invalid_api_key": 401,
    "unauthenticated": 401,
    "permission_error": 403,
    "permission_denied": 403,
    "not_found_error": 404,
    "model_not_found": 404,
    "not_found": 404,
    "request_timeout": 408,
    "rate_limit_exceeded": 429,
    "rate_limit_error": 429,
    "resource_exhausted": 429,
    "insufficient_quota": 429,
    "tokens": 429,
    "requests": 429,
    "server_error": 500,
    "api_error": 500,
    "internal": 500,
    "internal_server_error": 500,
    "overloaded_error": 529,
    "service_unavailable": 503,
    "unavailable": 503,
    "timeout": 504,
}
_SPENT_QUOTA = frozenset({"insufficient_quota", "billing_hard_limit_reached"})


@dataclass(frozen=True)
class Failure:
    """One failed model request: the error to answer with, and whether another request may help."""

    error: AgentloopError
    retryable: bool = False
    wait_s: float | None = None
    """How long the endpoint asked to be left alone (Retry-After), when it said."""


def provider_message(body: Any, fallback: str = "") -> str:
    """The endpoint's own explanation in an error body of any shape, shortened to a readable size."""
    text = _message_in(body)
    if not text:
        text = fallback
    text = " ".join(text.split())
    if len(text) > _MAX_MESSAGE_CHARS:
        text = text[: _MAX_MESSAGE_CHARS - 1] + "…"
    return text


def _message_in(body: Any) -> str:
    if body is None:
        return ""
    if isinstance(body, str):
        return _plain_text(body)
    if isinstance(body, list):
        return "; ".join(filter(None, (_message_in(item) for item in body[:5])))
    if isinstance(body, dict):
        for key in ("error", "message", "detail", "msg", "error_message", "title"):
            value = body.get(key)
            if isinstance(value, str) and value:
                return _with_upstream(_plain_text(value), body)
            if isinstance(value, dict | list):
                found = _message_in(value)
                if found:
                    return found
        return json.dumps(body, ensure_ascii=False)[:_MAX_MESSAGE_CHARS]
    return str(body)


def _with_upstream(message: str, body: dict[str, Any]) -> str:
    """A gateway's generic message with the upstream provider's own words (OpenRouter's metadata.raw)."""
    metadata = body.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if isinstance(raw, str) and raw and raw not in message:
        return f"{message}: {_plain_text(raw)}"
    return message


def _plain_text(text: str) -> str:
    """Text of an HTML error page (a proxy's 502), or the text itself."""
    if "<" not in text or ">" not in text:
        return text
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", text, flags=re.IGNORECASE | re.DOTALL)
    body = html.unescape(re.sub(r"<[^>]+>", " ", body))
    body = " ".join(body.split())
    if title is not None:
        heading = " ".join(html.unescape(title.group(1)).split())
        if heading and not body.startswith(heading):
            return f"{heading}: {body}" if body else heading
    return body


def retry_after_s(headers: Any, now: float | None = None) -> float | None:
    """The wait an answer's Retry-After (seconds or an HTTP date) or retry-after-ms asks for."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _code_of(body: Any) -> str:
    """The error code string a body carries (``code``, ``type``, ``status``), lower-cased."""
    if isinstance(body, list) and body:
        return _code_of(body[0])
    if not isinstance(body, dict):
        return ""
    inner = body.get("error")
    if isinstance(inner, dict):
        return _code_of(inner)
    for key in ("code", "type", "status"):
        value = body.get(key)
        if isinstance(value, str) and value and not value.isdigit():
            return value.lower()
    return ""


def status_failure(status: int, message: str, code: str, endpoint: str, wait_s: float | None) -> Failure:
    """The failure an error status (HTTP, or carried in a stream's error) stands for."""
    code = code.lower()
    if not status:
        status = _CODE_STATUS.get(code, 0)
    said = f": {message}" if message else ""
    if (status in (400, 413, 422) or code == "context_length_exceeded") and (
        code == "context_length_exceeded" or _CONTEXT_WORDS.search(message)
    ):
        return Failure(
            InvalidArgument(
                "params.messages",
                f"the conversation does not fit the model's context window "
                f"({endpoint} answered {status or code}){said}",
                reason=CONTEXT_LENGTH_EXCEEDED,
            )
        )
    if status in (400, 413, 422):
        return Failure(
            InvalidArgument("params", f"model endpoint {endpoint} rejected the request ({status}){said}")
        )
    if status == 401:
        return Failure(
            FailedPrecondition(f"model endpoint {endpoint} refused the configured API key (401){said}")
        )
    if status == 403:
        return Failure(PermissionDenied(f"model endpoint {endpoint} refused the request (403){said}"))
    if status == 404:
        return Failure(
            FailedPrecondition(f"model endpoint {endpoint} answered 404 (unknown model or path?){said}")
        )
    if status == 429:
        error = ResourceExhausted(
            f"model endpoint {endpoint} rate-limited the request (429){said}", retry_delay_s=wait_s
        )
        return Failure(error, retryable=code not in _SPENT_QUOTA, wait_s=wait_s)
    if status in (408, 409) or status >= 500 or status == 0:
        what = f"failed with HTTP {status}" if status else "reported an error"
        if code and not status:
            what += f" ({code})"
        return Failure(Unavailable(f"model endpoint {endpoint} {what}{said}"), retryable=True, wait_s=wait_s)
    return Failure(FailedPrecondition(f"model endpoint {endpoint} refused the request ({status}){said}"))


def classify(exc: BaseException, endpoint: str) -> Failure:
    """The failure an exception from a model request stands for."""
    if isinstance(exc, EndpointError):
        message = provider_message(exc.body, exc.message)
        return status_failure(exc.status, message, exc.code or _code_of(exc.body), endpoint, None)
    if isinstance(exc, openai.APITimeoutError) and not could_not_connect(exc):
        # The request's timeout is what is left of the step's: another request is tried only when
        # the endpoint gave up early, and the wait for it must fit in what is left.
        return Failure(DeadlineExceeded(f"model endpoint {endpoint} did not answer in time"), retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return Failure(Unavailable(f"model endpoint {endpoint} is unreachable: {exc}"), retryable=True)
    if isinstance(exc, openai.APIStatusError):
        message = provider_message(exc.body, "")
        wait = retry_after_s(exc.response.headers)
        return status_failure(exc.status_code, message, _code_of(exc.body), endpoint, wait)
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        error = Unavailable(
            f"model endpoint {endpoint} sent an answer that cannot be read: {exc}",
            reason=MODEL_ANSWER_MALFORMED,
        )
        # Text that is not JSON may be a body cut short on the way (tried again); JSON of a shape
        # this reader does not know would come back the same.
        return Failure(error, retryable=not isinstance(exc, MalformedAnswer))
    if isinstance(exc, openai.APIError):
        # An error the SDK found inside a stream (a chunk or event with an "error" object).
        found = endpoint_error(exc.body if exc.body is not None else exc.message)
        message = provider_message(found.body, found.message)
        return status_failure(found.status, message, found.code, endpoint, None)
    return Failure(
        Unavailable(f"model call to {endpoint} failed: {type(exc).__name__}: {exc}"), retryable=True
    )


def could_not_connect(exc: BaseException) -> bool:
    """Whether a timeout error is really a refused, failed or dropped connection.

    The SDK's aiohttp transport reports any failure to connect (refused, no
    route, DNS) and a server that hung up as a connect *timeout*; aiohttp's
    own exception, further down the chain, says which it was (its real
    timeouts are TimeoutError subclasses).
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False
