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

import re
import threading
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "mask_urls", "public_url", "redact", "register_secret", "split_query"]

MASK = "***"
# query parameters whose values are credentials (api-key, access_token, sig, X-Amz-Signature, password...)
_SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|auth|credential|signature|^sig$|session", re.I)
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
    """``url`` as it may be written down: userinfo and secret-looking query values masked.

    The masked values are registered as secrets (unless ``register`` is false), so :func:`redact`
    removes them from any other text too. A URL without credentials comes back unchanged.
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL we can read: record nothing of it
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if register:
            register_secret(userinfo)
            user, _, password = userinfo.partition(":")
            register_secret(password or user)
        netloc = f"{MASK}@{hostport}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAM.search(k) and v for k, v in pairs):
            masked = []
            for k, v in pairs:
                if _SECRET_PARAM.search(k) and v:
                    if register:
                        register_secret(v)
                    v = MASK
                masked.append((k, v))
            query = urlencode(masked, safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))
