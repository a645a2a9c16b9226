"""The LLM flags of the ``eq-env`` command, for any game's ``llm`` policies.

:data:`LLM_FLAGS` is a :class:`eq_env.core.cli.FlagGroup`: it adds ``--model``,
``--base-url``, ``--cache`` and the rest to the commands that play policies,
fills them into every ``llm`` spec (values written so that they read back
exactly: a model name cannot set another parameter; an endpoint goes in with
its credentials masked) and configures :mod:`eq_env.agents.client`. ``eq-env``
registers it when it starts (:mod:`eq_env.cli`).

**Which recordings a run answers from.** A command with an output directory
(``--out``: its default cache directory is ``OUT/llm_cache``) defaults to
``--cache readwrite``: run again, it resumes from its own recordings. Any other
(``eq-env play``, ``eq-env einstein play``: the default directory
``.eq_env_cache/llm`` is shared by every run in the working directory)
defaults to ``--cache write``: it records, for replays, but never answers from
disk — a new model behind the same URL and name would otherwise get the old
one's answers — unless ``--cache readwrite`` or ``--cache read`` asks for it.
Whenever a run will answer from recordings on disk, its first line (on stderr)
says so: where, and how to ask the endpoint instead (:func:`replay_notice`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from eq_env.agents.client import MAX_REPLY_BYTES, MIN_REPLY_BYTES, LLMSettings
from eq_env.core.cli import (
    count,
    int_in,
    non_negative_float,
    number_type,
    path_arg,
    positive_float,
    seed_arg,
)

__all__ = [
    "LLM_FLAGS",
    "LLMFlags",
    "add_cache_flags",
    "cache_mode_default",
    "replay_notice",
    "rerun_endpoints",
    "url_arg",
]

DEFAULT_REPLY = LLMSettings.max_reply_bytes


def url_arg(text: str) -> str:
    """An argparse type: an endpoint URL (an empty one, from an unset shell variable, must not quietly mean
    $OPENAI_BASE_URL or OpenAI's)."""
    from eq_env.agents.client import check_base_url
    from eq_env.agents.local import is_local

    if not text.strip():
        raise argparse.ArgumentTypeError("expected an endpoint URL such as http://localhost:8000/v1, got ''")
    if is_local(text):  # hf:DIR, a checkpoint played in this process
        return text
    try:
        check_base_url(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _model_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a model name, got an empty string")
    return text  # opaque: sent byte for byte


def cache_mode_default(cache_default: str) -> str:
    """The ``--cache`` default of a command whose answers go to ``cache_default``: ``readwrite`` in its own output
    directory (``OUT/...``: a rerun resumes), ``write`` in a directory every run shares (module docstring)."""
    return "readwrite" if cache_default.startswith("OUT/") else "write"


def add_cache_flags(group: Any, cache_default: str, mode_default: str) -> None:
    why = {
        "write": "; readwrite or read to answer from recordings made by earlier runs",
        "readwrite": ": a rerun resumes from this run's recordings",
    }.get(mode_default, "")
    group.add_argument(
        "--cache",
        choices=("off", "read", "write", "readwrite"),
        default=mode_default,
        help="record and replay: read = replay only (no request is made), write = always ask and "
        f"record, readwrite = replay hits and record misses (default {mode_default}{why})",
    )
    group.add_argument("--cache-dir", type=path_arg, help=f"where answers are recorded (default: {cache_default})")


def replay_notice(cache: str, cache_dir: Path, endpoints: Sequence[tuple[str, str]] = ()) -> str | None:
    """The line a run prints first when it will answer LLM requests from recordings on disk (``--cache read``
    or ``readwrite``, and ``cache_dir`` holds some); None when it will not. A replay (``read``) of none of
    ``endpoints`` (model, endpoint as recorded), when given, is refused before anything runs, with a line of
    its own: no notice then."""
    from eq_env.agents.client import LLMSetupError, ResponseCache

    cache_of = ResponseCache(cache_dir)
    if cache not in ("read", "readwrite") or not cache_of.holds_any():
        return None
    if cache == "read" and endpoints:
        for model, url in endpoints:
            try:
                cache_of.check_holds(model, url)
                break
            except LLMSetupError:
                continue
        else:
            return None
    if cache == "read":
        return (
            f"eq-env: replaying the LLM answers recorded in {cache_dir} (--cache read): no request is made; "
            "pass --cache write to ask the endpoint instead"
        )
    return (
        f"eq-env: answering LLM requests from the recordings in {cache_dir} where they exist (--cache readwrite), "
        "asking the endpoint only for the rest; pass --cache write to ask it for every answer"
    )


def _announce(cache: str, cache_dir: Path, endpoints: Sequence[tuple[str, str]] = ()) -> None:
    notice = replay_notice(cache, cache_dir, endpoints)
    if notice is not None:
        print(notice, file=sys.stderr, flush=True)


class LLMFlags:
    """The flags of ``llm`` policies (see the module docstring)."""

    def add(
        self,
        parser: argparse.ArgumentParser,
        cache_default: str,
        roles: Sequence[str] = (),
        *,
        many_models: bool = False,
    ) -> None:
        """The flags; with ``many_models``, ``--model`` may be repeated (``args.model`` is then a list or None)."""
        which = " or ".join(roles) if roles else "policy"
        group = parser.add_argument_group(
            "LLM policies", f"for a {which} spec 'llm' (flags fill what the spec does not say)"
        )
        if many_models:
            group.add_argument(
                "--model",
                type=_model_name,
                action="append",
                help="model name, sent as is; repeat "
                "the flag for several models (default: $EQ_ENV_MODEL, else gpt-4.1)",
            )
        else:
            group.add_argument(
                "--model", type=_model_name, help="model name, sent as is (default: $EQ_ENV_MODEL, else gpt-4.1)"
            )
        group.add_argument(
            "--base-url",
            type=url_arg,
            help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, "
            "else OpenAI's); credentials in it are used, never recorded",
        )
        group.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never stored or cached")
        group.add_argument(
            "--temperature",
            type=number_type(float, "a number in [0, 2]", lambda v: 0 <= v <= 2),
            help="sampling temperature (default 0)",
        )
        group.add_argument("--max-tokens", type=int_in(1, 10_000_000), help="completion token limit per request")
        group.add_argument("--llm-seed", type=seed_arg, help="the 'seed' sampling parameter sent with requests")
        group.add_argument(
            "--max-reasks", type=count, help="invalid replies sent back with the error before the fallback (default 2)"
        )
        group.add_argument(
            "--concurrency", type=int_in(1, 4096), default=8, help="episodes in flight at once (default 8)"
        )
        add_cache_flags(group, cache_default, cache_mode_default(cache_default))
        group.add_argument(
            "--max-reply-bytes",
            type=int_in(MIN_REPLY_BYTES, MAX_REPLY_BYTES),
            default=DEFAULT_REPLY,
            help="the most bytes of a reply read per sample (or 64 per token of --max-tokens, when "
            "more); a longer one is an invalid reply, billed but not read, quoted back or cached "
            f"(default {DEFAULT_REPLY})",
        )
        group.add_argument(
            "--max-retries",
            type=int_in(0, 100),
            default=5,
            help="retries after 429/408/409/5xx/timeouts/connection errors (default 5)",
        )
        group.add_argument(
            "--backoff",
            type=non_negative_float,
            default=0.5,
            help="first retry delay in seconds, doubled per retry, with jitter (default 0.5)",
        )
        group.add_argument("--timeout", type=positive_float, default=60.0, help="seconds per request (default 60)")
        group.add_argument(
            "--price-prompt", type=non_negative_float, default=0.0, help="dollars per million prompt tokens"
        )
        group.add_argument(
            "--price-completion", type=non_negative_float, default=0.0, help="dollars per million completion tokens"
        )
        group.add_argument(
            "--no-endpoint-check",
            dest="endpoint_check",
            action="store_false",
            help="do not check, before the first request, that the endpoint answers, accepts the key "
            "and lists the model (for endpoints that serve models they do not list)",
        )
        group.add_argument(
            "--dry-run",
            action="store_true",
            help="print one rendered prompt per LLM role and the reply schema; call nothing",
        )

    def fill(self, spec: str, args: argparse.Namespace) -> str:
        """An ``llm`` spec with the model, endpoint and sampling flags filled in (they key the results);
        any other spec as it is.

        Values are written so that they read back exactly (:func:`~eq_env.core.policy.format_policy_spec`):
        a model name such as ``x,gate=none`` stays one model name and cannot set another parameter; the
        endpoint goes in with its credentials masked (the real one stays in this process's memory).
        """
        from eq_env.agents.client import register_endpoint, resolve_base_url
        from eq_env.core.policy import format_policy_spec, parse_policy_spec

        name, kwargs = parse_policy_spec(spec)
        if name == "hf":  # a checkpoint in this process: the sampling flags, never another model or endpoint
            for key, value in (
                ("temperature", args.temperature),
                ("max_tokens", args.max_tokens),
                ("seed", args.llm_seed),
                ("max_reasks", args.max_reasks),
            ):
                if value is not None and key not in kwargs:
                    kwargs[key] = value
            return format_policy_spec(name, kwargs)
        if name != "llm":
            return spec
        model = args.model if args.model is not None else os.environ.get("EQ_ENV_MODEL") or "gpt-4.1"
        fill = {
            "model": model,
            "base_url": resolve_base_url(args.base_url),
            "temperature": args.temperature,
            "max_tokens": args.max_tokens,
            "seed": args.llm_seed,
            "max_reasks": args.max_reasks,
        }
        for key, value in fill.items():
            if value is not None and key not in kwargs:
                kwargs[key] = value
        if isinstance(kwargs.get("base_url"), str):
            kwargs["base_url"] = register_endpoint(kwargs["base_url"])
        return format_policy_spec(name, kwargs)

    def configure(self, args: argparse.Namespace, cache_dir: Path) -> None:
        """The LLM client's runtime settings, from the flags."""
        from eq_env.agents.client import configure

        s = configure(
            cache=args.cache,
            cache_dir=args.cache_dir or cache_dir,
            max_retries=args.max_retries,
            backoff=args.backoff,
            timeout=args.timeout,
            api_key=args.api_key,
            price_prompt=args.price_prompt,
            price_completion=args.price_completion,
            check_endpoint=args.endpoint_check,
            max_reply_bytes=args.max_reply_bytes,
        )
        _announce(s.cache, s.cache_dir, [self._endpoint(args)])

    @staticmethod
    def _endpoint(args: argparse.Namespace) -> tuple[str, str]:
        """(model, endpoint as recorded) that the flags fill into ``llm`` specs (the first ``--model``)."""
        from eq_env.agents.client import register_endpoint, resolve_base_url

        model = args.model[0] if isinstance(args.model, list) and args.model else args.model
        if not isinstance(model, str):
            model = os.environ.get("EQ_ENV_MODEL") or "gpt-4.1"
        return model, register_endpoint(resolve_base_url(args.base_url))

    def prices(self, args: argparse.Namespace) -> tuple[float, float]:
        return args.price_prompt, args.price_completion

    # -- rerun: a record's LLM policies ----------------------------------------------------------
    def add_rerun(self, parser: argparse.ArgumentParser, cache_default: str) -> None:
        group = parser.add_argument_group("LLM policies")
        add_cache_flags(group, cache_default, "read")
        group.add_argument(
            "--base-url",
            type=url_arg,
            help="the record's endpoint with its credentials, which records hold masked "
            "(http://***@host/v1); needed to ask it again (--cache readwrite or write)",
        )
        group.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never stored or cached")

    def configure_rerun(self, policies: Mapping[str, str], args: argparse.Namespace, cache_dir: Path) -> None:
        """Make the record's endpoints reachable as recorded (or refuse), and configure the client: an LLM
        run is replayed from its recordings by default — same answers, no request."""
        from eq_env.agents.client import configure

        rerun_endpoints(policies, args)
        s = configure(
            cache=args.cache,
            cache_dir=args.cache_dir or cache_dir,
            **({"api_key": args.api_key} if args.api_key is not None else {}),
        )
        _announce(s.cache, s.cache_dir, _spec_endpoints(policies))


def _spec_endpoints(policies: Mapping[str, str]) -> list[tuple[str, str]]:
    """(model, endpoint) of every ``llm`` spec among ``policies``, as a record holds them."""
    from eq_env.agents.client import resolve_base_url
    from eq_env.core.policy import parse_policy_spec

    pairs = []
    for spec in policies.values():
        name, kwargs = parse_policy_spec(str(spec))
        if name == "llm":
            pairs.append((str(kwargs.get("model") or "gpt-4.1"), str(kwargs.get("base_url") or resolve_base_url(None))))
    return pairs


def rerun_endpoints(policies: Mapping[str, str], args: argparse.Namespace) -> None:
    """Make the LLM endpoints of a record's ``policies`` reachable as recorded, or refuse with one line.

    Records hold endpoints with their credentials masked (``http://***@host/v1``). ``--base-url`` gives
    the real one: it must be the record's once masked, and requests to the masked form then go to it.
    Without it, only a replay (``--cache read``) may use a masked endpoint: a request would
    authenticate as the literal mask.
    """
    from eq_env.agents.client import register_endpoint, resolve_base_url
    from eq_env.core.policy import parse_policy_spec
    from eq_env.core.redact import public_url

    endpoints = []
    for spec in policies.values():
        name, kwargs = parse_policy_spec(str(spec))
        if name == "llm":  # (an endpoint left out of the spec is the one $OPENAI_BASE_URL names now)
            endpoints.append(str(kwargs.get("base_url") or resolve_base_url(None)))
    endpoints = list(dict.fromkeys(endpoints))
    given = None
    if args.base_url is not None:
        url = resolve_base_url(args.base_url)
        given = public_url(url)
        if not endpoints:
            raise ValueError(f"--base-url: record {args.key!r} has no LLM policy, so no endpoint to give")
        if given not in endpoints:
            raise ValueError(
                f"--base-url {given} does not match the record's endpoint {' or '.join(endpoints)} (credentials masked)"
            )
        register_endpoint(url)
    if args.cache != "read":
        masked = [e for e in endpoints if e != given and _has_masked_credentials(e)]
        if masked:
            raise ValueError(
                f"the record's endpoint {masked[0]} has masked credentials; give them with "
                "--base-url (the full URL), or replay with --cache read"
            )


def _has_masked_credentials(url: str) -> bool:
    """``url`` is an endpoint as records hold it, its userinfo or a query value masked."""
    from eq_env.core.redact import MASK

    try:
        parts = urlsplit(url)
    except ValueError:
        return True  # (public_url records an unreadable URL as the mask alone)
    userinfo = parts.netloc.rpartition("@")[0]
    return userinfo == MASK or any(v == MASK for _, v in parse_qsl(parts.query, keep_blank_values=True))


LLM_FLAGS = LLMFlags()
