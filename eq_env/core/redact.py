"""Keep secrets out of everything a run writes.

Credentials reach the package three ways: an API key (``--api-key``,
``OPENAI_API_KEY``), the userinfo of an endpoint URL
(``http://user:SECRET@host/v1``) and secret-looking query parameters
(``?api-key=SECRET``). None of them may reach a file: the specs written into
results, tables and cost reports pass through :func:`mask_urls`, endpoints
through :func:`public_url`, error messages through :func:`redact`.

:func:`public_url` is an endpoint as it may be recorded: userinfo and secret
query values replaced by ``***``; the secrets it removed are registered, so
:func:`redact` also takes them out of any text (a server that echoes the key
in an error message, a spec string typed with the URL in it). The registry
lives in this process's memory only.
"""

from __future__ import annotations

import base64
import re
import threading
from urllib.parse import parse_qsl, quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

__all__ = ["MASK", "mask_urls", "public_url", "redact", "register_secret", "split_query"]

MASK = "***"
# query parameters whose values are credentials (api-key, access_token, sig, X-Amz-Signature, password...)
_SECRET_PARAM = re.compile(
    r"key|token|secret|pass|pwd|^pw$|auth|credential|signature|^sig$|session|jwt|bearer|cookie|^code$", re.I
)
_MIN_SECRET = 4  # shorter strings would redact ordinary words; URLs are still masked structurally

_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Take ``value`` out of every text :func:`redact` sees from now on (in this process)."""
    if value and len(value) >= _MIN_SECRET and value != MASK:
        with _lock:
            _secrets.add(value)


def redact(text: str) -> str:
    """``text`` with every registered secret, and the credentials of any URL in it, replaced by ``***``:
    for free text that may hold anything, such as a server's error message."""
    if _secrets:
        # longest first: a secret that contains another is masked whole
        for secret in sorted(_secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, MASK)
    return mask_urls(text)


def mask_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it masked, and nothing else changed: for text with
    a structure, such as a policy spec, where a registered secret that happens to be a common word
    (a local server's dummy key, ``test``) must not mask a model name."""
    return _URL.sub(lambda m: public_url(m.group(0), register=False), text) if "://" in text else text


_URL = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>,]+")


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """(the URL without its query string, the query parameters): an SDK takes them apart."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query="")), dict(parse_qsl(parts.query, keep_blank_values=True))


def public_url(url: str, *, register: bool = True) -> str:
    """``url`` as it may be written down: userinfo, secret-looking query and path parameters and any
    fragment masked.

    The masked values are registered as secrets (unless ``register`` is false) in every form they may
    travel in — as typed, percent-decoded, percent-encoded, and userinfo as the HTTP Basic credentials
    it becomes — so :func:`redact` removes them from any other text too (a server echoing a header or
    the request line). A URL without credentials comes back unchanged.
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL we can read: record nothing of it
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if register:
            _register_userinfo(userinfo)
        netloc = f"{MASK}@{hostport}"
    query = _masked_params(parts.query, "&", register)
    path = _masked_params(parts.path, ";", register) if ";" in parts.path else parts.path
    fragment = parts.fragment
    if fragment:  # never sent to a server, so nothing needs it in a record
        if register:
            _masked_params(fragment, "&", register, every=True)
        fragment = MASK
    if (netloc, query, path, fragment) == (parts.netloc, parts.query, parts.path, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, path, query, fragment))


def _register_variants(value: str) -> None:
    decoded = unquote_plus(value)
    for form in {value, unquote(value), decoded, quote(decoded, safe=""), quote_plus(decoded)}:
        register_secret(form)


def _register_userinfo(userinfo: str) -> None:
    _register_variants(userinfo)
    user, _, password = userinfo.partition(":")
    _register_variants(password or user)
    basic = f"{unquote(user)}:{unquote(password)}".encode()  # what an HTTP client sends for it
    register_secret(base64.b64encode(basic).decode())


def _masked_params(text: str, sep: str, register: bool, every: bool = False) -> str:
    """``text`` (a query, or a path with ``;name=value`` parameters) with secret-looking values masked."""
    if not text or "=" not in text:
        return text
    out, changed = [], False
    for i, item in enumerate(text.split(sep)):
        name, eq, value = item.partition("=")
        secret = eq and value and (every or _SECRET_PARAM.search(unquote_plus(name))) and not (sep == ";" and i == 0)
        if secret:
            if register:
                _register_variants(value)
            item, changed = f"{name}={MASK}", True
        out.append(item)
    return sep.join(out) if changed else text
