"""Chat completions on any OpenAI-compatible endpoint: structured output, retries, a replayable cache.

:class:`LLMClient` wraps the ``openai`` SDK's async client. One call,
:meth:`LLMClient.complete`, returns a :class:`Completion` and handles:

* **structured output**: ``response_format`` with the JSON schema, falling back
  to JSON mode, then to plain text (from which the first JSON object is
  taken), when the endpoint rejects a mode; the mode that worked is kept;
* **bounded replies**: at most ``max_reply_bytes`` of a response body are kept (:func:`reply_limit`);
  a longer reply is an *oversize* completion: its text is not kept, quoted back or cached, the policies
  treat it as an invalid reply, and its usage (read from the end of the body) is billed as reported;
* **transport failures**: rate limits (429), 408/409/425, server errors (5xx),
  timeouts, connection errors and 2xx bodies that are not chat completions are
  retried with exponential backoff and jitter, honouring ``Retry-After`` (seconds,
  milliseconds or an HTTP date); after ``max_retries`` an :class:`LLMUnavailableError`
  is raised, which the runner records as a failed episode;
* **record and replay**: an on-disk cache keyed by everything that changes a
  request (model, base URL, messages, sampling parameters, schema, prompt
  version; never the API key), and an in-memory one, so that the same request
  in one process — e.g. the with-artifacts and action-only regimes of one
  state — gets the same sample; a request already in flight is not sent twice,
  the second asker waits for the first answer. Final failures are recorded too:
  a replay (``cache="read"``) fails the same way, ``readwrite`` asks again;
* **usage**: tokens from the response's ``usage``, estimated (and flagged) when
  an endpoint reports none;
* **fail fast**: before its first request a process checks, once per endpoint
  and model, that the cache directory can be written, that the endpoint answers,
  accepts the key and lists the model (``GET /models``, where it is served);
  when not, :class:`LLMSetupError` stops the run with one line instead of
  failing every episode after minutes of retries. ``cache="read"`` checks that
  the recording exists;
* **no secret on disk**: the API key never enters a request key or a file;
  an endpoint is recorded and keyed with its credentials masked
  (:func:`eq_env.core.redact.public_url`), query parameters of the URL are sent as
  such, error messages are redacted before they are stored, and so are completions
  (:func:`eq_env.core.redact.redact_reply`), before the policy, the records or the cache
  see them: a replay reads exactly what the recorded run's policy read. The key and the
  URL's secrets are registered in every form they may travel in (percent-encoded,
  base64 — ``Bearer KEY``, Basic credentials — in either case).

Within one run (until :meth:`LLMClient.forget`) a request that finally failed
stays failed: whoever asks it again in the run — the other regime of the same
state — gets the same failure, as a replay of the recording would.

Runtime settings that do not change results (cache mode and directory,
retries, timeouts, prices) live in :class:`LLMSettings`, set with
:func:`configure`; model and sampling parameters belong to the policy.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import functools
import hashlib
import json
import logging
import math
import os
import random
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from eq_env.agents.local import LocalModel, is_local, local_model
from eq_env.core.policy import PolicySetupError
from eq_env.core.redact import public_url, redact, redact_reply, register_secret, split_query

__all__ = [
    "CACHE_MODES",
    "Completion",
    "LLMClient",
    "LLMSettings",
    "LLMSetupError",
    "LLMUnavailableError",
    "NotRecordedError",
    "ResponseCache",
    "UnreadableCacheEntryError",
    "alias_endpoint",
    "configure",
    "read_body",
    "register_endpoint",
    "reply_limit",
    "settings",
]

log = logging.getLogger("eq_env.llm")

CACHE_MODES = ("off", "read", "write", "readwrite")
DEFAULT_BASE_URL = "https://api.openai.com/v1"
MIN_REPLY_BYTES, MAX_REPLY_BYTES = 1024, 1 << 30  # the range of max_reply_bytes


class LLMUnavailableError(RuntimeError):
    """The endpoint could not answer (after retries), or a replay found no recorded answer.

    ``requests`` and ``retries`` say what was tried, ``errors`` what went wrong each time.
    ``answers`` holds what was obtained before the failure, when one call asked several requests
    (:meth:`LLMClient.complete_many`): their costs are the caller's too.
    """

    def __init__(
        self,
        message: str,
        *,
        requests: int = 0,
        retries: int = 0,
        errors: list[str] | None = None,
        answers: list[Completion] | None = None,
    ) -> None:
        super().__init__(message)
        self.requests = requests
        self.retries = retries
        self.errors = list(errors or [])
        self.answers = list(answers or [])


class NotRecordedError(LLMUnavailableError):
    """A replay (``cache="read"``) found no recording of this request."""


class ChoicesUnsupportedError(Exception):
    """The endpoint rejected ``n > 1`` (several samples in one request). ``requests``, ``retries`` and
    ``errors``: what asking cost, as for :class:`LLMUnavailableError` (the requests were made)."""

    def __init__(self, message: str, *, requests: int = 0, retries: int = 0, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.requests = requests
        self.retries = retries
        self.errors = list(errors or [])


class LLMSetupError(PolicySetupError):
    """The run cannot make its requests at all: endpoint unreachable, key rejected, model not served,
    cache directory unusable. Raised before the first request; the runners stop instead of failing
    every episode."""


@dataclass(frozen=True)
class LLMSettings:
    """What changes how requests are made, never what they return.

    Attributes:
        cache: ``"off"``; ``"read"`` replays only (a miss is an error, no request is
            made); ``"write"`` always asks and records (the default: a run never answers
            from recordings it did not make unless asked to); ``"readwrite"`` replays hits
            and records misses (a resumed run, or reuse across runs asked for explicitly).
        cache_dir: where responses are stored (one JSON file per request).
        max_reply_bytes: the most bytes of a response body kept per sample: a request's limit is
            :func:`reply_limit` — this, or :data:`REPLY_BYTES_PER_TOKEN` bytes per token of its
            ``max_tokens`` when that is more, times its ``n`` samples. A longer body is an oversize
            reply (module docstring). The default, 1 MiB, is hundreds of times what an honest reply to
            the package's ``max_tokens`` (32 to 1,024) takes.
        max_retries: retries of a request after a 429, 5xx, timeout or connection error.
        backoff: first backoff in seconds, doubled per retry (with jitter), capped by ``max_backoff``.
        timeout: seconds per request.
        api_key: overrides ``OPENAI_API_KEY``.
        price_prompt, price_completion: dollars per million tokens, for cost reports.
        check_endpoint: before the first request to an endpoint, check that it answers, accepts
            the key and lists the model (see the module docstring).
    """

    cache: str = "write"
    cache_dir: Path = Path(".eq_env_cache/llm")
    max_reply_bytes: int = 1 << 20
    max_retries: int = 5
    backoff: float = 0.5
    max_backoff: float = 30.0
    timeout: float = 60.0
    api_key: str | None = None
    price_prompt: float = 0.0
    price_completion: float = 0.0
    check_endpoint: bool = True

    def __post_init__(self) -> None:
        if self.cache not in CACHE_MODES:
            raise ValueError(f"cache must be one of {CACHE_MODES}, got {self.cache!r}")
        for name in ("max_retries", "backoff", "max_backoff", "timeout", "price_prompt", "price_completion"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        if not isinstance(self.max_retries, int):
            raise ValueError(f"max_retries must be an integer, got {self.max_retries!r}")
        limit = self.max_reply_bytes
        if isinstance(limit, bool) or not isinstance(limit, int) or not MIN_REPLY_BYTES <= limit <= MAX_REPLY_BYTES:
            raise ValueError(
                f"max_reply_bytes must be an integer in [{MIN_REPLY_BYTES}, {MAX_REPLY_BYTES}], got {limit!r}"
            )
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive (seconds per request), got {self.timeout!r}")
        object.__setattr__(self, "cache_dir", Path(self.cache_dir))
        register_secret(self.api_key)

    def key(self) -> str | None:
        """The API key requests carry: ``api_key``, else ``$OPENAI_API_KEY`` (registered as a secret)."""
        key = (self.api_key or os.environ.get("OPENAI_API_KEY") or "").strip() or None  # a blank key is none
        register_secret(key)
        return key


_settings = LLMSettings()

REPLY_BYTES_PER_TOKEN = 64  # far more than any tokenizer's longest token, JSON-escaped


def reply_limit(max_tokens: int, n: int = 1) -> int:
    """The most bytes of a response body kept for a request of ``n`` samples of ``max_tokens`` tokens each
    (see :class:`LLMSettings`'s ``max_reply_bytes``)."""
    return n * max(settings().max_reply_bytes, REPLY_BYTES_PER_TOKEN * max_tokens)


def settings() -> LLMSettings:
    return _settings


def configure(**changes: Any) -> LLMSettings:
    """Change the process-wide :class:`LLMSettings` (validated); returns the new settings."""
    global _settings
    _settings = replace(_settings, **changes)
    return _settings


@dataclass
class Completion:
    """One answer: its text, its cost in tokens, and how it was obtained.

    ``prompt_tokens`` and ``completion_tokens`` are what the sample cost when it was drawn (from the
    API's ``usage``; estimated at four characters a token, with ``usage_estimated``, when an
    endpoint reports none). They are the same whether the answer comes from the endpoint, the cache
    or a request in flight for the same key, so records do not depend on how a run was scheduled;
    ``billed`` says whether this call paid for them.
    """

    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency: float = 0.0
    retries: int = 0
    requests: int = 0
    cached: bool = False
    mode: str = ""
    errors: list[str] = field(default_factory=list)
    usage_estimated: bool = False
    choices: list[str] = field(default_factory=list)  # every sample of an ``n > 1`` request (content: the first)
    # a reply over the limit: {"bytes": received, "limit": the limit} (its text is not kept: content "")
    oversize: dict[str, int] | None = None
    sample: bool = True  # false: a request that gave no sample (see LLMClient.complete_many); no texts

    @property
    def oversize_error(self) -> str | None:
        """Why an oversize reply is invalid, as the policies tell the model (None: within the limit)."""
        if not self.oversize:
            return None
        return (
            f"the reply was {self.oversize['bytes']:,} bytes long, over the limit of {self.oversize['limit']:,} "
            "bytes, and was not read; answer briefly"
        )

    @property
    def billed(self) -> bool:
        return not self.cached

    @property
    def texts(self) -> list[str]:
        """Every sample this answer holds: ``choices`` of an ``n > 1`` request, else ``[content]`` (none when
        it is no ``sample``)."""
        if not self.sample:
            return []
        return list(self.choices) if self.choices else [self.content]

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Completion:
        oversize = record.get("oversize")
        if not (isinstance(oversize, dict) and all(_count(oversize.get(k)) for k in ("bytes", "limit"))):
            oversize = None
        return cls(
            record["content"],
            record["prompt_tokens"],
            record["completion_tokens"],
            cached=True,
            mode=record.get("mode", ""),
            usage_estimated=bool(record.get("usage_estimated")),
            choices=[c for c in record.get("choices") or [] if isinstance(c, str)],
            oversize=oversize,
        )


class UnreadableCacheEntryError(ValueError):
    """A recording exists but cannot be read (corrupted, truncated, not of a recording's shape, or a
    directory where a file should be). ``readwrite`` records over it; a replay reports it."""


_BASE_URL_SCHEMES = ("http", "https")


def check_base_url(url: str) -> None:
    """Raise ValueError unless ``url`` is an http(s) URL with a host (and a valid port, if any)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as err:
        raise ValueError(f"base_url must be an http(s) URL, got {public_url(url)!r} ({err})") from None
    if parts.scheme not in _BASE_URL_SCHEMES or not parts.hostname:
        raise ValueError(f"base_url must be an http(s) URL such as http://localhost:8000/v1, got {public_url(url)!r}")


class ResponseCache:
    """Responses on disk, one JSON file per request key (written atomically)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer (``content`` and token counts) or failure (``error``); None when nothing
        is recorded. Raises :class:`UnreadableCacheEntryError` (naming the file) for a file that exists but
        cannot be read or is not of that shape."""
        path = self._path(key)
        try:
            value = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError) as err:
            raise UnreadableCacheEntryError(f"{path}: {type(err).__name__}: {err}") from None
        if isinstance(value, dict):
            if isinstance(value.get("error"), str):
                return value
            ok = (
                isinstance(value.get("content"), str)
                and _count(value.get("prompt_tokens"))
                and _count(value.get("completion_tokens"))
            )
            if ok:
                return value
        raise UnreadableCacheEntryError(f"{path}: not a recorded answer or failure")

    def lookup(self, key: str) -> dict[str, Any] | None:
        """:meth:`get`, with an unreadable entry counted as nothing recorded (it will be written over)."""
        try:
            return self.get(key)
        except UnreadableCacheEntryError:
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        try:
            tmp.write_text(json.dumps(value))
            os.replace(tmp, path)
        finally:  # never leave a temporary file behind, whatever failed
            tmp.unlink(missing_ok=True)

    def check_writable(self) -> None:
        """Raise :class:`LLMSetupError` unless recordings can be written here (before anything is paid for)."""
        probe = self.directory / f".write-check-{os.getpid()}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            probe.write_text("")
            probe.unlink()
        except OSError as err:
            raise LLMSetupError(
                f"cannot record answers in the cache directory {self.directory} ({err.strerror or err}); "
                "choose another with --cache-dir, or --cache off"
            ) from None

    def holds_any(self) -> bool:
        """Whether some recording is here (a run in ``read`` or ``readwrite`` mode would answer from it)."""
        try:
            return self.directory.is_dir() and next(self.directory.glob("*/*.json"), None) is not None
        except OSError:
            return False

    def check_readable(self) -> None:
        """Raise :class:`LLMSetupError` unless there is a recording to replay here."""
        hint = (
            "(--cache read replays a recording: point --cache-dir at a run's llm_cache, or record one first "
            "with --cache write)"
        )
        if not self.directory.is_dir():
            what = "is not a directory" if self.directory.exists() else "does not exist"
            raise LLMSetupError(f"nothing to replay: the cache directory {self.directory} {what} {hint}")
        if not self.holds_any():
            raise LLMSetupError(f"nothing to replay: {self.directory} holds no recording {hint}")

    def check_holds(self, model: str, base_url: str) -> None:
        """Raise :class:`LLMSetupError` unless some recording here was made with ``model`` at ``base_url``
        (a replay with another model or endpoint than the run it replays would miss every request)."""
        seen: set[tuple[str, str]] = set()
        for path in self.directory.glob("*/*.json"):
            try:
                request = json.loads(path.read_text()).get("request") or {}
                made = (str(request.get("model")), str(request.get("base_url")))
            except (OSError, ValueError, AttributeError):
                continue
            if made == (model, base_url):
                return
            seen.add(made)
        held = "; ".join(f"model {m!r} at {u}" for m, u in sorted(seen)[:5]) or "nothing readable"
        raise LLMSetupError(
            f"nothing to replay for model {model!r} at {base_url} in {self.directory}: it holds {held}; "
            "pass the --model and --base-url the recorded run used"
        )


def request_key(identity: dict[str, Any]) -> str:
    # ASCII escapes: any string, even one holding a lone surrogate, hashes
    return hashlib.sha256(json.dumps(identity, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


_SCHEMA_DIGESTS: dict[int, tuple[dict[str, Any], str]] = {}


def schema_digest(schema: dict[str, Any]) -> str:
    """A schema's digest, computed once per schema object (it is part of every request key)."""
    hit = _SCHEMA_DIGESTS.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _SCHEMA_DIGESTS[id(schema)] = (schema, request_key({"schema": schema}))
    return hit[1]


_MODES = ("json_schema", "json_object", "text")


@functools.cache
def _transport() -> Any:
    """The HTTP module of the SDK's transport (httpx, or httpx2 in newer SDKs)."""
    import openai._base_client as base

    for name in ("httpx2", "httpx"):
        module = getattr(base, name, None)
        if module is not None:
            return module
    raise ImportError("cannot find the openai SDK's HTTP transport")


def _raw() -> type:
    """The HTTP response class of the SDK's transport: asking the SDK for it returns the raw response,
    which we parse ourselves."""
    return _transport().Response  # type: ignore[no-any-return]


_ENDPOINTS: dict[str, str] = {}  # public (masked) URL -> the URL with its credentials, in memory only


def register_endpoint(url: str) -> str:
    """The public form of ``url`` (credentials masked), remembering the full one for this process: a
    policy made from the public URL — as specs and records carry it — still talks to the real endpoint."""
    public = public_url(url)
    if public != url:
        _ENDPOINTS[public] = url
    return public


def alias_endpoint(name: str, url: str) -> str:
    """Send requests to the endpoint ``name`` to ``url`` instead, in this process; returns ``name``.

    A local server on a port that changes from run to run (``eq-env sensitivity --demo``) keeps one name
    in request keys, results and records, so its runs resume and replay as any endpoint's do.
    """
    check_base_url(name)
    check_base_url(url)
    name = name.rstrip("/")
    _ENDPOINTS[name] = url.rstrip("/")
    return name


PER_POOL = 16  # requests in flight on one connection pool before another pool is opened


class _Pools:
    """The SDK clients (each with its connection pool) of one endpoint in one event loop.

    A request goes to the least busy pool; a new one opens when every pool has :data:`PER_POOL`
    requests in flight, so the pools follow the run's concurrency (one pool up to 16 requests at
    once, eight at 128). Why several: the SDK's transport (httpcore) walks every connection of a
    pool, probing each idle socket, twice per request, which at 128 connections in one pool costs
    more than the request itself. A pool is not capped (connections or keep-alive): the runner's
    concurrency is the bound, and a cap under it would queue requests or close and reopen
    connections on every request. Idle connections close after the transport's keep-alive expiry.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.clients: list[Any] = []
        self.busy: list[int] = []

    def _new(self) -> Any:
        # imported lazily: the SDK is slow to import
        from openai import DEFAULT_CONNECTION_LIMITS, AsyncOpenAI, DefaultAsyncHttpxClient

        # (the Limits class of the SDK's transport: httpx, or httpx2 in newer SDKs)
        limits = type(DEFAULT_CONNECTION_LIMITS)(max_connections=None, max_keepalive_connections=None)
        s = settings()
        url, query = split_query(self.url)  # the SDK appends paths to the URL: its query goes apart
        return AsyncOpenAI(
            api_key=s.key() or "not-needed",
            base_url=url,
            default_query=query or None,
            max_retries=0,
            timeout=s.timeout,
            http_client=DefaultAsyncHttpxClient(limits=limits, timeout=s.timeout),
        )

    def pick(self) -> tuple[int, Any]:
        """(index, client) of the least busy pool, opening one when all are full."""
        if self.busy:
            i = min(range(len(self.busy)), key=self.busy.__getitem__)
            if self.busy[i] < PER_POOL:
                return i, self.clients[i]
        self.clients.append(self._new())
        self.busy.append(0)
        return len(self.clients) - 1, self.clients[-1]

    async def post(self, path: str, body: bytes, limit: int) -> Body:
        """The response body to a POST of the JSON ``body``, at most ``limit`` bytes of it kept (:func:`read_body`);
        the SDK's errors for an error status."""
        i, client = self.pick()
        self.busy[i] += 1
        try:
            response = await client.post(path, cast_to=_raw(), content=body, stream=True)
            try:
                return await read_body(response.aiter_bytes(), limit)
            except _transport().TransportError as err:
                # The body is read as a stream, past the SDK's own error mapping: a link that drops or
                # stalls mid-body is the SDK's connection error or timeout, retried like one.
                raise BrokenBodyError(f"{type(err).__name__} while the body was read: {err}") from None
            finally:
                await response.aclose()
        finally:
            self.busy[i] -= 1

    async def aclose(self) -> None:
        clients, self.clients, self.busy = self.clients, [], []
        for client in clients:
            await client.close()


@dataclass
class Body:
    """A response body as read: whole (``over`` false), or its first and last bytes when it was longer than
    the limit (what lies between was received and dropped)."""

    data: bytes
    size: int  # bytes received
    over: bool = False
    tail: bytes = b""  # the last bytes received, when over (a completion's usage comes at its end)
    ended: bool = True  # received to its end (false: cut after DRAIN_FACTOR times the limit)


KEPT_OF_OVERSIZE = 64 * 1024  # bytes kept of each end of an oversize body, to read its usage
DRAIN_FACTOR = 64  # an oversize body is read (and dropped) to this many times the limit for its usage, then cut


async def read_body(chunks: Any, limit: int) -> Body:
    """Read an async iterator of byte chunks, keeping at most ``limit`` bytes (memory stays bounded whatever
    a server sends): the whole body when within the limit, else its two ends (:class:`Body`)."""
    head = bytearray()
    tail = b""
    size = 0
    over = False
    async for chunk in chunks:
        size += len(chunk)
        if not over:
            head += chunk
            if len(head) <= limit:
                continue
            over = True
            chunk = bytes(head[-KEPT_OF_OVERSIZE:])
            del head[KEPT_OF_OVERSIZE:]
        tail = (tail + chunk)[-KEPT_OF_OVERSIZE:]
        if size > DRAIN_FACTOR * limit:
            return Body(bytes(head), size, over=True, tail=tail, ended=False)
    return Body(bytes(head), size, over=over, tail=tail)


def _body(kwargs: dict[str, Any]) -> bytes:
    """A request body as the SDK encodes JSON (compact, UTF-8, no NaN); sent with its JSON content type."""
    return json.dumps(kwargs, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class LLMClient:
    """Completions from one model at one endpoint, with the behaviour described in the module docstring.

    ``base_url`` is the endpoint as recorded and keyed: with its credentials (userinfo, secret query
    values) masked. Requests go to the full URL, which stays in memory.
    """

    # process-wide: the same request gets the same answer, or the same failure, whichever policy asks
    _memory: ClassVar[dict[str, dict[str, Any]]] = {}
    # requests in flight, by (event loop, key): a second asker waits for the first one's answer
    _inflight: ClassVar[dict[tuple[int, str], asyncio.Future[tuple[str, Any]]]] = {}
    # the outcome of each check made before a first request (None: fine), and a lock per event loop
    _checked: ClassVar[dict[tuple[str, ...], str | None]] = {}
    _warned: ClassVar[set[str]] = set()  # cache directories already warned about in this run
    _check_locks: ClassVar[dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Lock]]] = {}

    def __init__(self, model: str, base_url: str | None = None) -> None:
        if not isinstance(model, str) or not model:
            hint = f' (in a spec, quote a name that reads as a number or none: model="{model}")' if model != "" else ""
            raise ValueError(f"model must be a non-empty string, got {model!r}{hint}")
        try:
            model.encode()
        except UnicodeEncodeError:
            raise ValueError(f"model must be text a request can carry (UTF-8), got {model!r}") from None
        if base_url is not None and (not isinstance(base_url, str) or not base_url.strip()):
            raise ValueError(f"base_url must be a URL or None (for $OPENAI_BASE_URL, else OpenAI's), got {base_url!r}")
        full = resolve_base_url(base_url)
        self.local = is_local(full)  # a model in this process (eq_env.agents.local), not an endpoint
        if not self.local:
            check_base_url(full)
        self.model = model
        self.base_url = full if self.local else register_endpoint(full)
        self._url = _ENDPOINTS.get(self.base_url, self.base_url)
        self._mode_index = 0
        self._n_supported: bool | None = None  # does the endpoint take n > 1? (None: not asked yet)
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, _Pools]] = {}

    def _local(self) -> LocalModel:
        """The local model ``base_url`` names (an LLMSetupError, one line, when it cannot be had)."""
        try:
            return local_model(self.base_url)
        except (ValueError, ImportError, OSError) as err:
            raise LLMSetupError(str(err)) from None

    def _client(self) -> Any:
        """The SDK client for the next request of the running event loop: the least busy of its pools."""
        return self._pools().pick()[1]

    def _pools(self) -> _Pools:
        # the SDK clients of each event loop: their connection pools belong to the loop that made them
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop:  # (a new loop may reuse a closed one's id)
            entry = self._clients[id(loop)] = (loop, _Pools(self._url))
            self._clients = {id(loop): entry}  # a closed loop's clients are dropped
        return entry[1]

    @classmethod
    def forget(cls) -> None:
        """Start a new run: drop the answers and failures held in memory (the disk cache is kept) and the
        checks made; the next request goes to disk or the endpoint, and a failure is asked again."""
        cls._memory.clear()
        cls._checked.clear()
        cls._warned.clear()

    async def aclose(self) -> None:
        """Close the connections opened in the running event loop (before the loop itself closes)."""
        loop = asyncio.get_running_loop()
        entry = self._clients.pop(id(loop), None)
        if entry is not None and entry[0] is loop:
            await entry[1].aclose()

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema_name: str,
        schema: dict[str, Any] | None,
        prompt_version: str,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        n: int = 1,
        sample: int = 0,
        extra: dict[str, Any] | None = None,
    ) -> Completion:
        """One answer to ``messages``: from memory, the disk cache, a request in flight, or the endpoint.

        ``schema=None`` asks for plain text (no ``response_format``). ``n > 1`` asks for ``n`` samples in
        one request (``Completion.choices``; :class:`ChoicesUnsupportedError` when the endpoint rejects it);
        ``sample`` tells apart otherwise identical requests (it is keyed, never sent): see
        :meth:`complete_many`. ``extra`` holds further sampling parameters sent in the request body as
        given (``{"frequency_penalty": 0.4}``, ``{"repetition_penalty": 1.2}``); it may not set what the
        client sets itself. All three are keyed only when not the default, so other keys never change.

        Raises :class:`LLMUnavailableError` when the endpoint cannot answer after the retries, when
        the same request already failed in this run, and in replay mode (``cache="read"``) when there
        is no recording, or the recording is of a failure (replayed as the same failure, with the same
        message). In ``readwrite`` mode a failure recorded by an earlier run is asked again. Raises
        :class:`LLMSetupError` when the run cannot make requests at all (see :meth:`check`).
        """
        s = settings()
        extra = _check_extra(extra)
        identity = {
            "model": self.model,
            "base_url": self.base_url,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "schema": None if schema is None else schema_digest(schema),
            "prompt_version": prompt_version,
        }
        if self.local:
            local = self._local()
            if not local.cacheable:  # a model being trained, a remote player: every request is a new sample
                await self.check()
                return await self._request(messages, schema_name, schema, temperature, max_tokens, seed, n, extra)
            identity["weights"] = local.fingerprint  # another checkpoint in the same directory: other answers
        if n != 1:
            identity["n"] = n
        if sample:
            identity["sample"] = sample
        if extra:
            identity["extra"] = extra
        key = request_key(identity)
        cache = ResponseCache(s.cache_dir)
        stored = self._memory.get(key)
        if stored is None and s.cache in ("read", "readwrite"):
            stored = self._recorded(cache, key, s.cache)
        if stored is not None:
            self._memory[key] = stored
            if "error" in stored:  # failed earlier in this run, or in the run a replay plays back
                raise LLMUnavailableError(stored["error"])
            return Completion.from_record(stored)
        if s.cache == "read":
            self._check_once(
                ("holds", str(s.cache_dir), self.model, self.base_url),
                lambda: cache.check_holds(self.model, self.base_url),
            )
            raise NotRecordedError(f"replay (cache=read): no recorded answer for this request in {s.cache_dir}")

        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        pending = self._inflight.get(slot)
        if pending is not None:  # the same request is on its way (e.g. the other regime of this state)
            kind, value = await asyncio.shield(pending)
            if kind == "ok":
                return Completion.from_record(value)
            if kind == "error":
                raise LLMUnavailableError(value)
            # the first asker was cancelled before any answer: ask ourselves
            return await self.complete(
                messages,
                schema_name=schema_name,
                schema=schema,
                prompt_version=prompt_version,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
                n=n,
                sample=sample,
                extra=extra,
            )
        future: asyncio.Future[tuple[str, Any]] = loop.create_future()
        self._inflight[slot] = future

        def settle(outcome: tuple[str, Any]) -> None:
            # before any cache I/O: a waiter must never be left hanging
            self._inflight.pop(slot, None)
            future.set_result(outcome)

        writes = s.cache in ("write", "readwrite")
        try:
            await self.check()
            completion = await self._request(messages, schema_name, schema, temperature, max_tokens, seed, n, extra)
        except LLMUnavailableError as err:
            failure = {"error": str(err), "request": _describe(identity)}
            self._memory[key] = failure  # the rest of this run sees the same failure
            settle(("error", str(err)))
            recorded = cache.lookup(key) if writes else None
            if writes and (recorded is None or "error" in recorded):
                # recorded so that a replay fails the same way (as it failed last); never over an answer
                self._store(cache, key, failure)
            raise
        except BaseException:  # cancelled, a setup error (or a bug): whoever waits asks for itself
            settle(("retry", None))
            raise
        record = {
            "content": completion.content,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "mode": completion.mode,
            "usage_estimated": completion.usage_estimated,
            "request": _describe(identity),
        }
        if completion.choices:
            record["choices"] = completion.choices
        if completion.oversize:
            record["oversize"] = completion.oversize
        self._memory[key] = record
        settle(("ok", record))
        if writes:
            self._store(cache, key, record)
        return completion

    async def complete_many(
        self,
        messages: list[dict[str, str]],
        k: int,
        *,
        schema_name: str,
        schema: dict[str, Any] | None,
        prompt_version: str,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        extra: dict[str, Any] | None = None,
    ) -> list[Completion]:
        """``k`` samples of one prompt: one request with ``n=k`` where the endpoint takes it, else ``k``
        requests (samples 0..k-1, keyed apart; sample 0 is the plain request). An endpoint that rejects
        ``n`` (400 or 422), or answers it with fewer choices, is remembered (by this client) and not asked
        with ``n`` again. A replay of a run that fell back to ``k`` requests replays those. ``extra``:
        further sampling parameters, as for :meth:`complete`.

        The answers' ``texts`` are the ``k`` samples. Every request made is in the answers' counts: a
        rejected ``n=k`` request (and its retries) and one answered with fewer choices come first, as
        answers that are no sample (``sample`` false, no ``texts``; the latter's tokens are billed).

        **Separate requests are separate samples**: sample ``i`` is sent with the seed ``seed + i`` — with
        no seed set, sample 0 with none (the plain request) and sample ``i`` with ``i`` — so no two
        requests of the ``k`` have the same body. At temperature 0 an endpoint that decodes greedily
        still answers them alike, as it answers ``n=k`` with ``k`` equal choices: the caller should say
        so (:class:`eq_env.agents.einstein_puzzle.policies.VerifiedLLMPlayer` does).

        Raises :class:`LLMUnavailableError` when the ``n=k`` request, or any of the ``k`` requests, cannot
        be answered; for the latter, once all ``k`` are settled, with the requests and retries of every
        failed one and, in ``answers``, what was obtained (the caller's costs too).
        """
        ask: dict[str, Any] = {
            "schema_name": schema_name,
            "schema": schema,
            "prompt_version": prompt_version,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "extra": extra,
        }
        if k == 1:
            return [await self.complete(messages, **ask)]
        paid: list[Completion] = []  # requests that gave no sample
        if self._n_supported is not False:
            try:
                many = await self.complete(messages, n=k, **ask)
            except ChoicesUnsupportedError as err:
                self._n_supported = False
                paid.append(
                    Completion(
                        "",
                        requests=err.requests,
                        retries=err.retries,
                        sample=False,
                        errors=[*err.errors[:-1], f"n={k} rejected: {err}"],
                    )
                )
            except NotRecordedError:
                pass  # a replay of a run that made k requests
            else:
                if len(many.texts) >= k:  # (more than asked: the first k are the samples)
                    many.choices = many.texts[:k]
                    return [many]
                self._n_supported = False  # answered fewer choices: the endpoint ignores n
                many.sample = False
                many.errors = [*many.errors, f"n={k} answered with {len(many.texts)} choice(s)"]
                paid.append(many)

        def asked(i: int) -> dict[str, Any]:
            return {**ask, "seed": i if seed is None else seed + i} if i else ask

        settled = await asyncio.gather(
            *(self.complete(messages, sample=i, **asked(i)) for i in range(k)), return_exceptions=True
        )
        got = [r for r in settled if isinstance(r, Completion)]
        failed = [r for r in settled if not isinstance(r, Completion)]
        if failed:
            other = next((e for e in failed if not isinstance(e, LLMUnavailableError)), None)
            if other is not None:  # a setup error, a cancellation: as it came
                raise other
            lost = [e for e in failed if isinstance(e, LLMUnavailableError)]
            kind = NotRecordedError if any(isinstance(e, NotRecordedError) for e in lost) else LLMUnavailableError
            raise kind(
                f"{lost[0]} ({len(lost)} of {k} samples failed)",
                requests=sum(e.requests for e in lost),
                retries=sum(e.retries for e in lost),
                errors=[m for e in lost for m in e.errors],
                answers=[*paid, *got],
            )
        return [*paid, *got]

    @classmethod
    def _recorded(cls, cache: ResponseCache, key: str, mode: str) -> dict[str, Any] | None:
        """What the disk holds for ``key``. ``readwrite``: a failure recorded by an earlier run is asked
        again, an unreadable recording is a miss. ``read``: an unreadable recording is a failure."""
        if mode == "read":
            cls._check_once(("read", str(cache.directory)), cache.check_readable)
            try:
                return cache.get(key)
            except UnreadableCacheEntryError as err:
                raise LLMUnavailableError(f"replay (cache=read): the recording is unreadable: {err}") from None
        stored = cache.lookup(key)
        return None if stored is not None and "error" in stored else stored

    @classmethod
    def _store(cls, cache: ResponseCache, key: str, record: dict[str, Any]) -> None:
        """Record; a recording that cannot be written costs the replay of this answer, never the answer."""
        try:
            cache.put(key, record)
        except OSError as err:
            if str(cache.directory) not in cls._warned:  # once a run: a full disk fails every write
                cls._warned.add(str(cache.directory))
                log.warning(
                    "eq_env: could not record an answer in %s (%s); the run goes on, but a replay will "
                    "miss what is not recorded",
                    cache.directory,
                    err,
                )

    @classmethod
    def _check_once(cls, what: tuple[str, ...], check: Any) -> None:
        if what not in cls._checked:
            try:
                check()
            except LLMSetupError as err:
                cls._checked[what] = str(err)
            else:
                cls._checked[what] = None
        problem = cls._checked[what]
        if problem is not None:
            raise LLMSetupError(problem)

    async def check(self) -> None:
        """Before a first request (once per run, endpoint, model and key): unless ``check_endpoint`` is
        off, the endpoint answers, accepts the key and lists the model; the cache directory can be
        written. In a replay (``cache="read"``): there is a recording of this model at this endpoint.
        Raises :class:`LLMSetupError` naming what is wrong. The runners call it (through the policy's
        ``check``) before a run's first episode; :meth:`complete` before a first request."""
        s = settings()
        if s.cache == "read":  # a replay asks nothing: there must be a recording of this model and endpoint
            cache = ResponseCache(s.cache_dir)
            self._check_once(("read", str(s.cache_dir)), cache.check_readable)
            self._check_once(
                ("holds", str(s.cache_dir), self.model, self.base_url),
                lambda: cache.check_holds(self.model, self.base_url),
            )
            return
        if self.local:
            local_key: tuple[str, ...] = ("local", self.base_url)
            if local_key not in self._checked:
                self._checked[local_key] = self._local().problem()
            problem = self._checked[local_key]
            if problem is not None:
                raise LLMSetupError(problem)
        elif s.check_endpoint:  # first: a run that cannot be served leaves nothing behind, not even a directory
            what = ("endpoint", self.base_url, self.model, hashlib.sha256((s.key() or "").encode()).hexdigest())
            if what not in self._checked:
                loop = asyncio.get_running_loop()
                entry = self._check_locks.get(id(loop))
                if entry is None or entry[0] is not loop:
                    entry = self._check_locks[id(loop)] = (loop, asyncio.Lock())
                async with entry[1]:  # concurrent first requests wait for one check
                    if what not in self._checked:
                        self._checked[what] = await self._check_endpoint()
            problem = self._checked[what]
            if problem is not None:
                raise LLMSetupError(problem)
        if s.cache in ("write", "readwrite"):
            self._check_once(("cache", str(s.cache_dir)), ResponseCache(s.cache_dir).check_writable)

    def _rejected(self, status: int) -> str:
        if "@" in urlsplit(self._url).netloc:  # an HTTP client sends userinfo as Basic auth, not the key
            return (
                f"the endpoint {self.base_url} rejected the credentials in the URL ({status}; they are sent as "
                "HTTP Basic auth, in place of the API key)"
            )
        return f"the endpoint {self.base_url} rejected the API key ({status}): set OPENAI_API_KEY or pass --api-key"

    async def _check_endpoint(self) -> str | None:
        """What stops this endpoint from serving the model (None: nothing we can see)."""
        import openai

        s = settings()
        where = f"the endpoint {self.base_url}"
        if s.key() is None and (urlsplit(self._url).hostname or "").lower() == "api.openai.com":
            return f"no API key for {where}: set OPENAI_API_KEY or pass --api-key"
        try:
            raw = await self._client().get("/models", cast_to=_raw(), options={"timeout": min(s.timeout, 10.0)})
        except (openai.APITimeoutError, openai.APIConnectionError) as err:
            offline = "; to replay a recording without it, pass --cache read" if s.cache != "off" else ""
            return (
                f"cannot reach {where} ({_short(err)}); check --base-url (or $OPENAI_BASE_URL) and the network{offline}"
            )
        except openai.APIStatusError as err:
            if err.status_code in (401, 403):
                return self._rejected(err.status_code)
            return None  # no model list here (404...), or a busy server: the requests will tell
        try:
            listed = [m["id"] for m in json.loads(raw.content)["data"] if isinstance(m.get("id"), str)]
        except (ValueError, KeyError, TypeError, AttributeError):
            return None  # an answer, but not a model list we can read
        if listed and self.model not in listed and f"{self.model}:latest" not in listed:
            shown = ", ".join(sorted(listed)[:12]) + (", ..." if len(listed) > 12 else "")
            return (
                f"{where} does not serve the model {self.model!r} (it lists: {shown}); check --model, "
                "or pass --no-endpoint-check if it serves models it does not list"
            )
        return None

    async def _request(
        self,
        messages: list[dict[str, str]],
        schema_name: str,
        schema: dict[str, Any] | None,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        n: int = 1,
        extra: dict[str, Any] | None = None,
    ) -> Completion:
        if self.local:
            return await self._local_request(messages, temperature, max_tokens, seed, n, extra)
        import openai

        s = settings()
        retries = requests = 0
        errors: list[str] = []
        started = time.perf_counter()
        while True:
            mode = "text" if schema is None else _MODES[self._mode_index]
            kwargs: dict[str, Any] = {
                "model": self.model,
                "messages": messages,
                "temperature": temperature,
                "max_tokens": max_tokens,
            }
            if seed is not None:
                kwargs["seed"] = seed
            if n != 1:
                kwargs["n"] = n
            if extra:
                kwargs.update(extra)
            if mode == "json_schema" and schema is not None:
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": schema_name, "schema": schema},
                }
            elif mode == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            requests += 1
            retryable: Exception | None = None
            oversize: dict[str, int] | None = None
            try:
                # The SDK's plain POST, as its docs show for any endpoint: the same client, connection
                # pool and errors as chat.completions.create, without its per-call parameter transform
                # (~4 ms: it re-walks the large JSON schema) or response model (we read two fields); the
                # body goes as the JSON bytes the SDK would send, encoded once, and comes back read
                # up to the reply limit.
                try:
                    raw = await self._pools().post("/chat/completions", _body(kwargs), reply_limit(max_tokens, n))
                except openai.UnprocessableEntityError as err:
                    if n == 1:
                        raise
                    # (some servers answer 422, not 400, to a parameter they do not take)
                    raise ChoicesUnsupportedError(
                        _short(err), requests=requests, retries=retries, errors=[*errors, _short(err)]
                    ) from None
                if raw.over:  # an invalid reply, billed: nothing of its text is kept
                    if b'"choices"' not in raw.data:  # (a proxy's page, not a completion: retried, never cached)
                        raise UnreadableResponseError(
                            f"{raw.size:,} bytes, over the reply limit, and not a chat completion: {raw.data[:120]!r}"
                        )
                    usage = oversize_usage(raw)
                    choices, oversize = [""], {"bytes": raw.size, "limit": reply_limit(max_tokens, n)}
                else:
                    choices, usage = parse_chat_choices(raw.data)
                content = choices[0]
            except openai.BadRequestError as err:
                if n != 1 and not _about_response_format(err):  # (whatever else it says: asked without n, it may pass)
                    raise ChoicesUnsupportedError(
                        _short(err), requests=requests, retries=retries, errors=[*errors, _short(err)]
                    ) from None
                if mode != "text" and _about_response_format(err):
                    errors.append(f"{mode} rejected: {_short(err)}")
                    # concurrent requests may all be rejected: move past this mode once, never further
                    self._mode_index = max(self._mode_index, _MODES.index(mode) + 1)
                    continue
                raise LLMUnavailableError(
                    f"request rejected (400): {_short(err)}",
                    requests=requests,
                    retries=retries,
                    errors=[*errors, _short(err)],
                ) from None
            except (openai.APITimeoutError, openai.APIConnectionError, BrokenBodyError, UnreadableResponseError) as err:
                errors.append(_short(err))
                retryable = err
            except openai.APIStatusError as err:
                if err.status_code in (401, 403):  # no request of this run can succeed: stop it
                    raise LLMSetupError(f"{self._rejected(err.status_code)}: {_short(err)}") from None
                if err.status_code == 404:
                    raise LLMSetupError(
                        f"the endpoint {self.base_url} does not serve this request "
                        f"(404: {_short(err)}); check --model and --base-url"
                    ) from None
                if err.status_code not in RETRY_STATUSES and err.status_code < 500:
                    # 422...: asking again will not help
                    raise LLMUnavailableError(
                        f"request failed ({err.status_code}): {_short(err)}",
                        requests=requests,
                        retries=retries,
                        errors=[*errors, _short(err)],
                    ) from None
                errors.append(_short(err))
                retryable = err
            if retryable is not None:
                if retries >= s.max_retries:
                    raise LLMUnavailableError(
                        f"gave up after {retries} retries: {'; '.join(errors)}",
                        requests=requests,
                        retries=retries,
                        errors=errors,
                    ) from None
                await asyncio.sleep(_backoff(retryable, retries, s))
                retries += 1
                continue
            estimated = usage is None
            if usage is None:
                generated = raw.size // 4 if oversize else sum(estimate_tokens(c) for c in choices)
                usage = {
                    "prompt_tokens": estimate_tokens("".join(m["content"] for m in messages)),
                    "completion_tokens": generated,
                }
            # what the policy, the records and the cache see: a secret the endpoint echoed is masked here,
            # once, so that a replay reads exactly what this run read
            return Completion(
                content=redact_reply(content),
                prompt_tokens=usage["prompt_tokens"],
                completion_tokens=usage["completion_tokens"],
                latency=time.perf_counter() - started,
                retries=retries,
                requests=requests,
                mode=mode,
                errors=errors,
                usage_estimated=estimated,
                choices=[redact_reply(c) for c in choices] if n != 1 and not oversize else [],
                oversize=oversize,
            )

    async def _local_request(
        self,
        messages: list[dict[str, str]],
        temperature: float,
        max_tokens: int,
        seed: int | None,
        n: int,
        extra: dict[str, Any] | None,
    ) -> Completion:
        """An answer from the local model: plain text (no structured-output mode: the policies read JSON
        out of text), one sample per ``n``."""
        local = self._local()
        unknown = sorted(set(extra or ()) - set(local.parameters))
        if unknown:  # (every request would be refused alike: stop the run, as for an endpoint's 400 on it)
            takes = ", ".join(sorted(local.parameters)) or "none"
            raise LLMSetupError(
                f"the local model {self.base_url} does not take the sampling parameter {', '.join(unknown)} "
                f"(it takes: {takes})"
            )
        started = time.perf_counter()
        try:
            reply = await local.generate(
                messages, temperature=temperature, max_tokens=max_tokens, seed=seed, n=n, extra=dict(extra or {})
            )
        except (ValueError, RuntimeError) as err:  # (a refused request, as an endpoint's 400: recorded, replayed)
            first = (str(err).splitlines() or [type(err).__name__])[0][:300]
            raise LLMUnavailableError(f"the local model {self.base_url} refused: {first}", requests=1) from None
        texts = [redact_reply(t) for t in reply.texts]
        if len(texts) != n:
            raise LLMUnavailableError(f"the local model {self.base_url} gave {len(texts)} samples, not {n}", requests=1)
        return Completion(
            content=texts[0],
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            latency=time.perf_counter() - started,
            requests=1,
            mode="text",
            choices=texts if n != 1 else [],
        )


# what the client sets in a request body itself: ``extra`` may not override it
_OWN_PARAMETERS = frozenset({"model", "messages", "temperature", "max_tokens", "seed", "n", "response_format"})


def _check_extra(extra: dict[str, Any] | None) -> dict[str, Any] | None:
    """``extra`` as sent and keyed (None when empty); a ValueError for a parameter the client sets itself."""
    if not extra:
        return None
    clash = sorted(_OWN_PARAMETERS.intersection(extra))
    if clash:
        raise ValueError(f"extra may not set {', '.join(clash)}: the client sets it (pass it as an argument)")
    return dict(extra)


RETRY_STATUSES = frozenset({408, 409, 425, 429})  # and every 5xx: the server may answer next time


class BrokenBodyError(ConnectionError):
    """The connection dropped or timed out while a response's body was read: retried, never cached."""


class UnreadableResponseError(ValueError):
    """A 2xx body that is not a chat completion (a proxy's HTML page, a truncated body...): retried
    like a server error, never cached."""


def resolve_base_url(base_url: str | None) -> str:
    """The endpoint a policy talks to: the argument, else ``OPENAI_BASE_URL``, else OpenAI's."""
    return (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def estimate_tokens(text: str) -> int:
    """Tokens of a text when the endpoint reports no usage: about four characters a token."""
    return max(1, -(-len(text) // 4)) if text else 0


def parse_chat_completion(body: bytes) -> tuple[str, dict[str, int] | None]:
    """(the first choice's message text, usage or None) from a chat-completion body (see
    :func:`parse_chat_choices`)."""
    choices, usage = parse_chat_choices(body)
    return choices[0], usage


def parse_chat_choices(body: bytes) -> tuple[list[str], dict[str, int] | None]:
    """(every choice's message text, in index order; usage or None) from a chat-completion body.

    A message without text (``content`` null, a refusal) is the empty string: a reply the policy
    will find invalid and re-ask. Raises :class:`UnreadableResponseError` when the body is not a chat
    completion at all.
    """
    try:
        data = json.loads(body)
    except ValueError:
        raise UnreadableResponseError(f"not JSON: {body[:120]!r}") from None
    except RecursionError:  # (nested deeper than the parser goes)
        raise UnreadableResponseError(f"JSON nested too deep: {body[:120]!r}") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise UnreadableResponseError(f"no choices in {body[:120]!r}")
    texts: list[str] = []
    for choice in sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise UnreadableResponseError(f"no message in {body[:120]!r}")
        content = message.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(
                p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        texts.append(content if isinstance(content, str) else "")
    usage = data.get("usage")
    counts: dict[str, int] | None = None
    if isinstance(usage, dict):
        p: Any = usage.get("prompt_tokens")
        c: Any = usage.get("completion_tokens")
        if _count(p) and _count(c):
            counts = {"prompt_tokens": p, "completion_tokens": c}
    return texts, counts


_USAGE_KEY = re.compile(rb'(?<!\\)"usage"\s*:\s*')


def oversize_usage(body: Body) -> dict[str, int] | None:
    """The usage an oversize body reports (looked for in its last bytes, then its first), or None."""
    decoder = json.JSONDecoder()
    for part in (body.tail, body.data):
        for m in reversed(list(_USAGE_KEY.finditer(part))):
            try:
                usage, _ = decoder.raw_decode(part[m.end() :].decode("utf-8", "replace"))
            except (ValueError, RecursionError):
                continue
            if isinstance(usage, dict) and all(_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens")):
                return {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"]}
    return None


def _count(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _describe(identity: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in identity.items() if k != "messages"}


def _about_response_format(err: Exception) -> bool:
    text = str(err).lower()
    return "response_format" in text or "json_schema" in text or "json_object" in text or "response format" in text


def _short(err: Exception) -> str:
    status = getattr(err, "status_code", None)
    # a server may echo the key or the URL's credentials (redacted before the cut: no secret is cut in half)
    text = redact(" ".join(str(err)[:20_000].split()))
    return f"{type(err).__name__}{f' {status}' if status else ''}: {text[:200]}"


MAX_RETRY_AFTER = 300.0  # a server asking for longer is treated as asking for this


def _retry_after(headers: Any) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms``, ``retry-after`` in seconds or as an HTTP
    date), or None when it did not say, or said something unreadable."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                continue
            if when.tzinfo is None:
                when = when.replace(tzinfo=datetime.timezone.utc)
            seconds = (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
        if math.isfinite(seconds):
            return min(max(seconds, 0.0), MAX_RETRY_AFTER)
    return None


def _backoff(err: Exception, attempt: int, s: LLMSettings) -> float:
    """Exponential backoff with jitter; a server's Retry-After, when given, is honoured as asked."""
    response = getattr(err, "response", None)
    asked = _retry_after(getattr(response, "headers", None) or {})
    if asked is not None:
        return asked
    cap = min(s.max_backoff, s.backoff * (2**attempt))
    return random.uniform(cap / 2, cap)  # jitter changes only timing, never results
