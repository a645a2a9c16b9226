"""Keep secrets out of everything a run writes.

Credentials reach the package three ways: an API key (``--api-key``,
``OPENAI_API_KEY``), the userinfo of an endpoint URL
(``http://user:SECRET@host/v1``) and secret-looking query parameters
(``?api-key=SECRET``, also with a percent-encoded name: ``?api%5Fk%65y=SECRET``).
None of them may reach a file: the specs written into results, tables and cost
reports pass through :func:`mask_urls`, endpoints through :func:`public_url`,
error messages through :func:`redact`, and the completions an endpoint returns
through :func:`redact_reply` before anything records or reads them.

:func:`public_url` is an endpoint as it may be recorded: userinfo and secret
query values replaced by ``***``; the secrets it removed are registered, so
:func:`redact` also takes them out of any text (a server that echoes the key
in an error message, a spec string typed with the URL in it). The registry
lives in this process's memory only.

A registered secret is taken out in every form it may travel in
(:func:`secret_forms`): as typed, percent-decoded and percent-encoded, and in
base64 — standard and URL-safe alphabets, alone or at any position inside a
longer base64 text, which covers ``base64("Bearer KEY")`` and the HTTP Basic
credentials ``base64("user:KEY")`` — and in either case (a text may have been
case-folded on its way, such as a reply a parser lowercased).

Completions are redacted only of secrets of at least :data:`REPLY_MIN_SECRET`
characters: a shorter one (a local server's dummy key ``EMPTY``, a password
``pass``) is an ordinary word a model may write — ``pass`` is an Einstein
puzzle action — and masking it would change what the policy reads.
"""

from __future__ import annotations

import base64
import re
import threading
from urllib.parse import parse_qsl, quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "REPLY_MIN_SECRET",
    "mask_urls",
    "public_url",
    "redact",
    "redact_reply",
    "register_secret",
    "secret_forms",
    "split_query",
]

MASK = "***"
# query parameters whose values are credentials (api-key, access_token, sig, X-Amz-Signature, password...)
_SECRET_PARAM = re.compile(
    r"key|token|secret|pass|pwd|^pw$|auth|credential|signature|^sig$|session|jwt|bearer|cookie|^code$", re.I
)
_MIN_SECRET = 4  # shorter strings would redact ordinary words; URLs are still masked structurally
REPLY_MIN_SECRET = 8  # the shortest secret taken out of completions (see the module docstring)

# every form of every registered secret -> the length of the longest secret it is a form of
_forms: dict[str, int] = {}
_patterns: dict[int, tuple[re.Pattern[str] | None, tuple[str, ...]]] = {}  # by shortest secret, rebuilt on change
_lock = threading.Lock()


def _base64_forms(raw: bytes) -> set[str]:
    """``raw`` in base64 as it appears alone (padded) and inside any longer base64 text: at each of the three
    offsets modulo 3, the characters that depend on ``raw`` alone (a neighbour's bits change the others)."""
    forms = {base64.b64encode(raw).decode()}
    for offset, skip in ((0, 0), (1, 2), (2, 3)):
        encoded = base64.b64encode(b"\0" * offset + raw).decode().rstrip("=")
        tail = 1 if (offset + len(raw)) % 3 else 0  # the last character also holds the next byte's bits
        forms.add(encoded[skip : len(encoded) - tail])
    return forms | {f.translate(_URLSAFE) for f in forms}


_URLSAFE = str.maketrans("+/", "-_")


def secret_forms(value: str) -> set[str]:
    """Every form ``value`` may travel in (the module docstring): as typed, percent-decoded and -encoded,
    base64 (alone or inside a longer base64 text, either alphabet)."""
    decoded = unquote_plus(value)
    forms = {value, unquote(value), decoded, quote(decoded, safe=""), quote_plus(decoded), quote(value, safe="")}
    for text in {value, decoded}:
        forms |= _base64_forms(text.encode("utf-8", "surrogatepass"))
    return {f for f in forms if len(f) >= _MIN_SECRET and f != MASK}


def register_secret(value: str | None) -> None:
    """Take ``value``, in every form it may travel in (:func:`secret_forms`), out of every text :func:`redact`
    sees from now on (in this process)."""
    if not value or len(value) < _MIN_SECRET or value == MASK:
        return
    forms = secret_forms(value)
    with _lock:
        if all(_forms.get(f, 0) >= len(value) for f in forms):
            return
        for form in forms:
            _forms[form] = max(_forms.get(form, 0), len(value))
        _patterns.clear()


def _pattern(shortest: int) -> tuple[re.Pattern[str] | None, tuple[str, ...]]:
    """(one case-insensitive pattern of every form of a secret of at least ``shortest`` characters, longest
    first so that a form holding another is masked whole; the forms lowercased, to look for them first)."""
    with _lock:
        hit = _patterns.get(shortest)
        if hit is None:
            forms = sorted((f for f, n in _forms.items() if n >= shortest), key=len, reverse=True)
            compiled = re.compile("|".join(map(re.escape, forms)), re.I) if forms else None
            hit = _patterns[shortest] = (compiled, tuple(dict.fromkeys(f.lower() for f in forms)))
        return hit


def _unregistered(text: str, shortest: int) -> str:
    pattern, lowered = _pattern(shortest)
    if pattern is None:
        return text
    folded = text.lower()
    if not any(f in folded for f in lowered):  # (substring search first: the pattern is slower on long texts)
        return text
    return pattern.sub(MASK, text)


def redact(text: str, *, shortest: int = _MIN_SECRET) -> str:
    """``text`` with every registered secret (of at least ``shortest`` characters) in any of its forms and
    either case, and the credentials of any URL in it, replaced by ``***``: for free text that may hold
    anything, such as a server's error message."""
    return mask_urls(_unregistered(text, shortest))


def redact_reply(text: str) -> str:
    """A completion as it may be read, recorded and cached: :func:`redact` of the secrets of at least
    :data:`REPLY_MIN_SECRET` characters (shorter ones are words a model may write)."""
    return redact(text, shortest=REPLY_MIN_SECRET)


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

    A query parameter is secret-looking by its name as a server reads it, percent-decoded
    (``?api%5Fk%65y=...`` is ``api_key``). The masked values are registered as secrets (unless
    ``register`` is false) in every form they may travel in (:func:`secret_forms`), userinfo also as the
    HTTP Basic credentials it becomes, so :func:`redact` removes them from any other text too (a server
    echoing a header or the request line). A URL without credentials comes back unchanged.
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


def _register_userinfo(userinfo: str) -> None:
    register_secret(userinfo)
    user, _, password = userinfo.partition(":")
    register_secret(password or user)
    basic = f"{unquote(user)}:{unquote(password)}"  # what an HTTP client sends for it (base64'd)
    register_secret(basic)
    register_secret(base64.b64encode(basic.encode()).decode())


def _masked_params(text: str, sep: str, register: bool, every: bool = False) -> str:
    """``text`` (a query, or a path with ``;name=value`` parameters) with secret-looking values masked."""
    if not text or "=" not in text:
        return text
    out, changed = [], False
    for i, item in enumerate(text.split(sep)):
        name, eq, value = item.partition("=")
        secret = eq and value and (every or _SECRET_PARAM.search(_name(name))) and not (sep == ";" and i == 0)
        if secret:
            if register:
                register_secret(value)
            item, changed = f"{name}={MASK}", True
        out.append(item)
    return sep.join(out) if changed else text


def _name(name: str) -> str:
    """A parameter's name as a server reads it: percent-decoded (``api%5Fk%65y`` is ``api_key``), repeatedly,
    so that a name encoded twice is caught too."""
    for _ in range(4):
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    return name
