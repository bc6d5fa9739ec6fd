"""The errors a call can raise: one class per engram error code, and connection errors."""

from __future__ import annotations

from typing import Any

import httpx


class EngramError(Exception):
    """Every error this client raises."""


class APIConnectionError(EngramError):
    """engram could not be reached, or the connection broke before an answer."""

    def __init__(self, message: str, *, request: httpx.Request | None = None) -> None:
        super().__init__(message)
        self.request = request


class APITimeoutError(APIConnectionError):
    """engram did not answer within the timeout."""


class APIStatusError(EngramError):
    """engram answered with an error: `status`, engram's `code` and `message`, and the
    `request_id` (its `x-request-id`) to find the request in engram's logs."""

    def __init__(self, response: httpx.Response, body: Any) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        self.response = response
        self.status: int = response.status_code
        self.code: str = str(error.get("code") or _CODE_OF_STATUS.get(response.status_code, "error"))
        self.message: str = str(error.get("message") or response.reason_phrase or "error")
        self.field: str | None = error.get("field")
        self.request_id: str | None = response.headers.get("x-request-id")
        super().__init__(f"{self.status} {self.code}: {self.message}")


class InvalidRequestError(APIStatusError):
    """400: the request was not valid; `field` names what was wrong."""


class AuthenticationError(APIStatusError):
    """401: no API key, or a key that is unknown or revoked."""


class PermissionDeniedError(APIStatusError):
    """403: the key lacks the scope the call needs."""


class NotFoundError(APIStatusError):
    """404: no such memory, run, job or route."""


class ConflictError(APIStatusError):
    """409: the call conflicts with the current state (a run already queued, ...)."""


class PayloadTooLargeError(APIStatusError):
    """413: the request body is over the server's limit."""


class UnsupportedMediaTypeError(APIStatusError):
    """415: the body was not sent as JSON."""


class RateLimitError(APIStatusError):
    """429: the key is over its rate limit; `retry_after` is the wait engram asked for, in seconds."""

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.response)


class InternalServerError(APIStatusError):
    """500 (or another 5xx): engram failed; the request id finds it in the logs."""


class ServiceUnavailableError(APIStatusError):
    """503: engram cannot answer now (its database or a model is unavailable, or it is not ready)."""


_CLASS_OF_CODE: dict[str, type[APIStatusError]] = {
    "invalid_request": InvalidRequestError,
    "unauthorized": AuthenticationError,
    "forbidden": PermissionDeniedError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "payload_too_large": PayloadTooLargeError,
    "unsupported_media_type": UnsupportedMediaTypeError,
    "rate_limited": RateLimitError,
    "unavailable": ServiceUnavailableError,
    "not_ready": ServiceUnavailableError,
    "internal": InternalServerError,
}

_CLASS_OF_STATUS: dict[int, type[APIStatusError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}

# What a response without engram's error body (a proxy's, say) is called.
_CODE_OF_STATUS = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "internal",
    503: "unavailable",
}


def error_for(response: httpx.Response) -> APIStatusError:
    """The exception for an error response, chosen by engram's code, else by status."""
    try:
        body = response.json()
    except ValueError:
        body = None
    code = body.get("error", {}).get("code") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
    cls = _CLASS_OF_CODE.get(code or "") or _CLASS_OF_STATUS.get(response.status_code)
    if cls is None:
        cls = InternalServerError if response.status_code >= 500 else APIStatusError
    return cls(response, body)


def retry_after_seconds(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (engram sends whole seconds), or None."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
