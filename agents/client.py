"""Chat completions on any OpenAI-compatible endpoint: structured output, retries, a replayable cache.

:class:`LLMClient` wraps the ``openai`` SDK's async client. One call,
:meth:`LLMClient.complete`, returns a :class:`Completion` and handles:

* **structured output**: ``response_format`` with the JSON schema, falling back
  to JSON mode, then to plain text (from which the first JSON object is
  taken), when the endpoint rejects a mode; the mode that worked is kept;
* **transport failures**: rate limits (429), server errors (5xx), timeouts
  and connection errors are retried with exponential backoff and jitter,
  honouring ``Retry-After``; after ``max_retries`` an :class:`LLMUnavailableError`
  is raised, which the runner records as a failed episode;
* **record and replay**: an on-disk cache keyed by everything that changes a
  request (model, base URL, messages, sampling parameters, schema, prompt
  version; never the API key), and an in-memory one, so that the same request
  in one process — e.g. the with-artifacts and action-only regimes of one
  state — gets the same sample.

Runtime settings that do not change results (cache mode and directory,
retries, timeouts, prices) live in :class:`LLMSettings`, set with
:func:`configure`; model and sampling parameters belong to the policy.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

__all__ = [
    "CACHE_MODES",
    "Completion",
    "LLMClient",
    "LLMSettings",
    "LLMUnavailableError",
    "ResponseCache",
    "configure",
    "settings",
]

CACHE_MODES = ("off", "read", "write", "readwrite")
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class LLMUnavailableError(RuntimeError):
    """The endpoint could not answer (after retries), or a replay found no recorded answer."""


@dataclass(frozen=True)
class LLMSettings:
    """What changes how requests are made, never what they return.

    Attributes:
        cache: ``"off"``; ``"read"`` replays only (a miss is an error, no request is
            made); ``"write"`` always asks and records; ``"readwrite"`` replays hits
            and records misses (the default).
        cache_dir: where responses are stored (one JSON file per request).
        max_retries: retries of a request after a 429, 5xx, timeout or connection error.
        backoff: first backoff in seconds, doubled per retry (with jitter), capped by ``max_backoff``.
        timeout: seconds per request.
        api_key: overrides ``OPENAI_API_KEY``.
        price_prompt, price_completion: dollars per million tokens, for cost reports.
    """

    cache: str = "readwrite"
    cache_dir: Path = Path(".eq_env_cache/llm")
    max_retries: int = 5
    backoff: float = 0.5
    max_backoff: float = 30.0
    timeout: float = 60.0
    api_key: str | None = None
    price_prompt: float = 0.0
    price_completion: float = 0.0

    def __post_init__(self) -> None:
        if self.cache not in CACHE_MODES:
            raise ValueError(f"cache must be one of {CACHE_MODES}, got {self.cache!r}")
        for name in ("max_retries", "backoff", "max_backoff", "timeout", "price_prompt", "price_completion"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        object.__setattr__(self, "cache_dir", Path(self.cache_dir))


_settings = LLMSettings()


def settings() -> LLMSettings:
    return _settings


def configure(**changes: Any) -> LLMSettings:
    """Change the process-wide :class:`LLMSettings` (validated); returns the new settings."""
    global _settings
    _settings = replace(_settings, **changes)
    return _settings


@dataclass
class Completion:
    """One answer: its text, its cost in tokens, and how it was obtained."""

    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency: float = 0.0
    retries: int = 0
    requests: int = 0
    cached: bool = False
    mode: str = ""
    errors: list[str] = field(default_factory=list)


class ResponseCache:
    """Responses on disk, one JSON file per request key (written atomically)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(value))
        os.replace(tmp, path)


def request_key(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


_SCHEMA_DIGESTS: dict[int, tuple[dict[str, Any], str]] = {}


def schema_digest(schema: dict[str, Any]) -> str:
    """A schema's digest, computed once per schema object (it is part of every request key)."""
    hit = _SCHEMA_DIGESTS.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _SCHEMA_DIGESTS[id(schema)] = (schema, request_key({"schema": schema}))
    return hit[1]


_MODES = ("json_schema", "json_object", "text")


def _raw_response_type() -> type:
    """The HTTP response class of the SDK's transport (httpx, or httpx2 in newer SDKs): asking the SDK
    for it returns the raw response, which we parse ourselves."""
    import openai._base_client as base

    for name in ("httpx2", "httpx"):
        module = getattr(base, name, None)
        if module is not None:
            return module.Response
    raise ImportError("cannot find the openai SDK's HTTP response class")


class _LazyRaw:
    value: type | None = None


def _raw() -> type:
    if _LazyRaw.value is None:
        _LazyRaw.value = _raw_response_type()
    return _LazyRaw.value


class LLMClient:
    """Completions from one model at one endpoint, with the behaviour described in the module docstring."""

    # process-wide: the same request gets the same sample, whichever policy object asks
    _memory: ClassVar[dict[str, dict[str, Any]]] = {}

    def __init__(self, model: str, base_url: str | None = None) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._mode_index = 0
        self._clients: dict[int, Any] = {}

    def _client(self) -> Any:
        # one AsyncOpenAI per event loop: its connection pool belongs to the loop that made it
        loop = asyncio.get_running_loop()
        client = self._clients.get(id(loop))
        if client is None:
            from openai import AsyncOpenAI  # imported lazily: the SDK is slow to import

            s = settings()
            key = s.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
            client = AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=s.timeout)
            self._clients = {id(loop): client}  # a closed loop's client is dropped
        return client

    @classmethod
    def forget(cls) -> None:
        """Drop the in-memory answers (the disk cache is kept): the next request goes to disk or the endpoint."""
        cls._memory.clear()

    async def aclose(self) -> None:
        """Close the connections opened in the running event loop (before the loop itself closes)."""
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.close()

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema_name: str,
        schema: dict[str, Any],
        prompt_version: str,
        temperature: float,
        max_tokens: int,
        seed: int | None,
    ) -> Completion:
        s = settings()
        identity = {
            "model": self.model,
            "base_url": self.base_url,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "schema": schema_digest(schema),
            "prompt_version": prompt_version,
        }
        key = request_key(identity)
        stored = self._memory.get(key)
        if stored is None and s.cache in ("read", "readwrite"):
            stored = ResponseCache(s.cache_dir).get(key)
        if stored is not None:
            self._memory[key] = stored
            return Completion(stored["content"], stored["prompt_tokens"], stored["completion_tokens"], cached=True,
                              mode=stored.get("mode", ""))  # fmt: skip
        if s.cache == "read":
            raise LLMUnavailableError(f"replay (cache=read): no recorded answer for this request in {s.cache_dir}")
        completion = await self._request(messages, schema_name, schema, temperature, max_tokens, seed)
        record = {"content": completion.content, "prompt_tokens": completion.prompt_tokens,
                  "completion_tokens": completion.completion_tokens, "mode": completion.mode,
                  "request": {k: v for k, v in identity.items() if k != "messages"}}  # fmt: skip
        self._memory[key] = record
        if s.cache in ("write", "readwrite"):
            ResponseCache(s.cache_dir).put(key, record)
        return completion

    async def _request(
        self,
        messages: list[dict[str, str]],
        schema_name: str,
        schema: dict[str, Any],
        temperature: float,
        max_tokens: int,
        seed: int | None,
    ) -> Completion:
        import openai

        s = settings()
        retries = requests = 0
        errors: list[str] = []
        started = time.perf_counter()
        while True:
            mode = _MODES[self._mode_index]
            kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature,
                                      "max_tokens": max_tokens}  # fmt: skip
            if seed is not None:
                kwargs["seed"] = seed
            if mode == "json_schema":
                kwargs["response_format"] = {"type": "json_schema",
                                             "json_schema": {"name": schema_name, "schema": schema}}  # fmt: skip
            elif mode == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            requests += 1
            try:
                # The SDK's plain POST, as its docs show for any endpoint: the same client, connection
                # pool and errors as chat.completions.create, without its per-call parameter transform
                # (~4 ms: it re-walks the large JSON schema) or response model (we read two fields).
                raw = await self._client().post("/chat/completions", cast_to=_raw(), body=kwargs)
            except openai.BadRequestError as err:
                if mode != "text" and _about_response_format(err):
                    errors.append(f"{mode} rejected: {_short(err)}")
                    self._mode_index += 1  # the endpoint does not support this mode; remember it
                    continue
                raise LLMUnavailableError(f"request rejected (400): {_short(err)}") from None
            except (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
                    openai.APIConnectionError) as err:  # fmt: skip
                errors.append(_short(err))
                if retries >= s.max_retries:
                    raise LLMUnavailableError(f"gave up after {retries} retries: {'; '.join(errors)}") from None
                await asyncio.sleep(_backoff(err, retries, s))
                retries += 1
                continue
            except openai.APIStatusError as err:  # 401, 403, 404...: asking again will not help
                raise LLMUnavailableError(f"request failed ({err.status_code}): {_short(err)}") from None
            try:
                data = json.loads(raw.content)
                choice = (data.get("choices") or [{}])[0]
                content = (choice.get("message") or {}).get("content") or ""
                usage = data.get("usage") or {}
            except (ValueError, AttributeError, TypeError):
                errors.append(f"unreadable response: {raw.content[:200]!r}")
                content, usage = "", {}  # an empty reply: the policy re-asks, then falls back
            return Completion(
                content=content,
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                latency=time.perf_counter() - started,
                retries=retries,
                requests=requests,
                mode=mode,
                errors=errors,
            )


def _about_response_format(err: Exception) -> bool:
    text = str(err).lower()
    return "response_format" in text or "json_schema" in text or "json_object" in text or "response format" in text


def _short(err: Exception) -> str:
    status = getattr(err, "status_code", None)
    text = " ".join(str(err).split())
    return f"{type(err).__name__}{f' {status}' if status else ''}: {text[:200]}"


MAX_RETRY_AFTER = 300.0  # a server asking for longer is treated as asking for this


def _backoff(err: Exception, attempt: int, s: LLMSettings) -> float:
    """Exponential backoff with jitter; a server's Retry-After, when given, is honoured as asked."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return min(max(float(value) / scale, 0.0), MAX_RETRY_AFTER)
            except ValueError:
                pass  # an HTTP date: fall back to our own backoff
    cap = min(s.max_backoff, s.backoff * (2**attempt))
    return random.uniform(cap / 2, cap)  # jitter changes only timing, never results
