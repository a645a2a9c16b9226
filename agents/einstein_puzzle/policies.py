"""LLM players of the Einstein puzzle: the text observation in, one action of the grammar out.

Spec (``eq-env`` fills ``model``, ``base_url``, ``temperature``, ``max_tokens``, ``seed`` and
``max_reasks`` from its LLM flags when the spec leaves them out)::

    llm:model=gpt-4.1,base_url=http://localhost:8000/v1,reasoning=false,max_reasks=2,prompt_version=v1
    llm:model=gpt-4.1,verifier=reasoning,k=4

**The plain player** (:class:`LLMPlayer`, ``verifier`` and ``k`` not given) renders
``observation["text"]`` with :func:`eq_env.agents.einstein_puzzle.prompt.render_messages` and asks for plain
text (no JSON). The reply is parsed strictly: ``parse_action(action_line(reply), n)``
(:mod:`eq_env.einstein_puzzle.grammar`; ``n`` from the action mask's length). A reply that is not one
action, or names an action the mask rules out, is sent back with the reason — the grammar's error, or
why the action is not legal now as the text observation shows it (:func:`illegal_reason`:
deterministic, from the text alone) — up to ``max_reasks`` times; then the player passes, and says so
(``fallback``/``fallbacks``). With ``reasoning=true`` the model may think first and ends its reply with
``ACTION: <action>``; the thinking is billed like any completion.

**The verifier-assisted player** (:class:`VerifiedLLMPlayer`, ``verifier`` ∈ ``affordance``,
``communication``, ``reasoning``, ``none``; ``k`` candidates, default 4) is privileged: it reads the
game (``env.game``) to run the paper's verifiers (:data:`eq_env.einstein_puzzle.verifiers.VERIFIERS`).
It draws ``k`` candidates — one request with ``n=k`` where the endpoint takes it, else ``k`` requests
(:meth:`eq_env.agents.client.LLMClient.complete_many`) — and plays the first that passes the verifiers up to
the chosen one (affordance, then communication, then reasoning; ``none``: any action of the grammar),
else the least bad (passing the most of them, in that order; the first among ties; a reply that is no
action, or an oversize one, is worst and, if all are, the player passes). It does not re-ask. Its info
adds ``verifier_interventions`` (1 when the first candidate was rejected) and ``verifier_candidates``
(candidates examined).

*What k samples are.* On an endpoint that rejects ``n > 1`` (400 or 422; asked once per player, then
remembered) the ``k`` requests are ``k`` different requests: sample ``i`` is sent with the seed ``seed +
i`` (no seed set: none for sample 0, ``i`` for the others), so they are ``k`` samples wherever the
endpoint samples, and every request made — the rejected ``n=k`` request, each sample's retries, those of
samples that failed — is counted in ``transport``. At ``temperature=0`` a model decodes greedily: its
``k`` candidates, whether from ``n=k`` or from ``k`` requests, are then alike on an endpoint that decodes
deterministically — one sample, paid ``k`` times — and the info says so with ``greedy_candidates=True``;
give a temperature above 0 for candidates that can differ.

Infos, per decision, are the exchange–audit agents' (:meth:`eq_env.agents.llm.LLMPolicy._ask`): tokens,
``attempts``, ``invalid_replies`` (the re-asks' reasons), ``fallback`` and its reason, ``transport``
(requests, retries, cache hits, what this run paid); plus ``fallbacks`` and ``reasks`` as counts
(summed over an episode; ``reasks`` counts invalid replies, the one before a fallback included, as
:func:`eq_env.core.runner.llm_summary` does; the verifier-assisted player re-asks nothing, its unparsable
candidates are listed in ``invalid_replies``) and ``action`` (the action played, as text). An endpoint
that cannot answer after its retries raises :class:`eq_env.core.policy.PolicyError`: the runner records
a failed episode. Record and replay go through the client's cache: ``cache=read`` replays a run with no request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from eq_env.agents.client import LLMUnavailableError
from eq_env.agents.einstein_puzzle.prompt import PROMPT_DIR, render_messages
from eq_env.agents.llm import LLMPolicy, account, new_info, unavailable
from eq_env.agents.replies import ReplyError
from eq_env.core.policy import PolicyError
from eq_env.einstein_puzzle.grammar import GRAMMAR, GrammarError, action_line, parse_action
from eq_env.einstein_puzzle.rules import BIN_NAMES, GOAL_BINS, Action, Answer, Ask, Move, Pass, Share
from eq_env.einstein_puzzle.spaces import action_index, actions, n_from_actions
from eq_env.einstein_puzzle.verifiers import VERIFIERS, least_bad, verdicts

__all__ = ["VERIFIER_NAMES", "LLMPlayer", "VerifiedLLMPlayer", "illegal_reason", "player_factory", "read_action"]

VERIFIER_NAMES = (*VERIFIERS, "none")
MAX_K = 64
_SHOWN_LEGAL = 8  # legal actions named in a re-ask: enough to show the form, short enough to read


def _mask(observation: Mapping[str, Any]) -> np.ndarray:
    return np.asarray(observation["action_mask"])


_SPACE = re.compile(r"\s+")


def _line_breaks(reply: str) -> str:
    """``reply`` with each run of whitespace that holds a line break made one line break (and a no-break
    space, when the run held characters outside ASCII, which the grammar refuses): the action it names is
    the same — line breaks stay where lines start and end, and the grammar reads whitespace as one space —
    but finding the ``ACTION:`` line takes time quadratic in the length of such runs (a megabyte of newlines
    would take hours)."""
    return _SPACE.sub(
        lambda m: m.group() if "\n" not in m.group() else "\n" if m.group().isascii() else "\n\xa0", reply
    )


def read_action(reply: str, n: int) -> Action:
    """The action a reply names (its ``ACTION:`` line if it has one), or a :class:`GrammarError`."""
    return parse_action(action_line(_line_breaks(reply)), n)


# -- why an action is not legal, from the text observation alone -------------------------------------------
_REACH = re.compile(r"\bYou reach (.*?) and common\.")
_MODE = re.compile(r"^Communication: (\w+)\.", re.M)
_BOARD_LINE = re.compile(r"^- (\w+): (.*)$", re.M)


def _board(text: str) -> dict[int, int]:
    """object -> bin, from the text's board section."""
    section = text.partition("The board (objects in each bin):")[2].partition("\n\n")[0]
    where: dict[int, int] = {}
    for name, objects in _BOARD_LINE.findall(section):
        if name in BIN_NAMES and objects.strip() != "empty":
            for obj in objects.split(","):
                if obj.strip().isdigit():
                    where[int(obj)] = BIN_NAMES.index(name)
    return where


def _reach(text: str) -> set[int]:
    m = _REACH.search(text)
    names = re.findall(r"[a-z_]+", m.group(1)) if m else []
    return {BIN_NAMES.index(b) for b in names if b in BIN_NAMES} | {BIN_NAMES.index("common")}


def illegal_reason(action: Action, text: str, mask: Sequence[int] | np.ndarray) -> str:
    """Why ``action`` is not legal now, as the player's text observation shows it, and some legal actions.

    Deterministic and from the text alone (the plain player sees no more): moves are checked against the
    bins the text says the player reaches and the board it shows; other actions get the mode's rule.
    """
    n = n_from_actions(len(mask))
    mode_m = _MODE.search(text)
    mode = mode_m.group(1) if mode_m else ""
    if isinstance(action, Move):
        reach, board = _reach(text), _board(text)
        if action.src == action.dst:
            why = "an object must move to another bin"
        elif not {action.src, action.dst} <= reach:
            far = next(b for b in (action.src, action.dst) if b not in reach)
            why = f"you cannot reach {BIN_NAMES[far]} (you reach {', '.join(BIN_NAMES[b] for b in sorted(reach))})"
        elif board.get(action.obj) != action.src:
            at = board.get(action.obj)
            why = f"object {action.obj} is not in {BIN_NAMES[action.src]}" + (
                f" (it is in {BIN_NAMES[at]})" if at is not None else ""
            )
        elif action.src in GOAL_BINS:
            why = f"object {action.obj} is in its goal bin already"
        else:
            why = "that move is not allowed now"
    elif isinstance(action, Share):
        if mode in ("none",):
            why = "there is no communication in this mode"
        elif mode == "seek_only":
            why = "in seek_only mode you may share only right after your partner asks, a constraint about that object"
        else:
            why = f"constraint {action.constraint} is not one you hold and have not shared yet"
    elif isinstance(action, Ask):
        if mode in ("none", "provide_only"):
            why = f"there are no asks in {mode} mode"
        else:
            why = f"you may not ask about object {action.obj} now (it is placed already, or you just asked)"
    elif isinstance(action, Answer):
        if mode in ("none", "provide_only"):
            why = f"there are no answers in {mode} mode"
        else:
            why = f"you may answer about object {action.obj} only on the turn right after your partner asks about it"
    else:
        why = "pass is not allowed now"
    table = actions(n)
    legal = [a for a, ok in zip(table, mask, strict=True) if ok]
    same = [a for a in legal if type(a) is type(action)]
    shown = (same + [a for a in legal if type(a) is not type(action)])[:_SHOWN_LEGAL]
    hint = f" Legal now, for example: {'; '.join(a.text() for a in shown)}." if shown else ""
    return f"{action.text()!r} is not legal now: {why}.{hint}"


def _check(reply: str, observation: Mapping[str, Any], n: int) -> Action:
    """The legal action ``reply`` names; a :class:`ReplyError` with the reason otherwise."""
    try:
        action = read_action(reply, n)
    except GrammarError as err:
        raise ReplyError(str(err)) from None
    mask = _mask(observation)
    try:
        legal = bool(mask[action_index(action, n)])
    except ValueError:  # (a move from a bin to itself has no index)
        legal = False
    if not legal:
        raise ReplyError(illegal_reason(action, str(observation.get("text", "")), mask))
    return action


class LLMPlayer(LLMPolicy):
    """An Einstein puzzle player played by an LLM (see the module docstring).

    Args:
        model: the model name the endpoint knows, sent byte for byte (quote one that reads as a number).
        base_url: the endpoint (default ``OPENAI_BASE_URL``, else OpenAI's); credentials in it are used,
            never recorded.
        temperature, seed: sampling parameters sent with every request.
        max_tokens: completion token limit (default 32, or 1024 with ``reasoning``).
        prompt_version: the template ``agents/einstein_puzzle/prompts/player_<version>.txt``.
        max_reasks: replies that are no legal action sent back with the reason before passing.
        reasoning: let the model think first; it ends with an ``ACTION: <action>`` line.
    """

    role: ClassVar[str] = "player_0"  # (the registry makes one subclass per seat)
    PROMPTS = PROMPT_DIR
    PROMPT_ROLE = "player"

    def __init__(
        self,
        model: str = "gpt-4.1",
        base_url: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        prompt_version: str = "v1",
        max_reasks: int = 2,
        reasoning: bool = False,
    ) -> None:
        if not isinstance(reasoning, bool):
            raise ValueError(f"reasoning must be true or false, got {reasoning!r}")
        max_tokens = (1024 if reasoning else 32) if max_tokens is None else max_tokens
        super().__init__(model, base_url, temperature, max_tokens, seed, prompt_version, max_reasks)
        self.reasoning = reasoning
        end = 'end your reply with the line "ACTION: <action>"' if reasoning else "reply with exactly one action"
        # (braces doubled: the message goes through str.format with the error)
        rest = f"{end}, one of: {GRAMMAR}.".replace("{", "{{").replace("}", "}}")
        self._reask = "That reply is invalid: {error}. Answer again: " + rest

    def __repr__(self) -> str:
        return f"{self.name}(model={self.model!r}, base_url={self.client.base_url!r}, reasoning={self.reasoning})"

    def messages(self, observation: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages an observation becomes."""
        return render_messages(str(observation["text"]), self.prompt_version, reasoning=self.reasoning)

    async def aact(self, observation: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        n = n_from_actions(len(_mask(observation)))
        action, info = await self._ask(
            self.messages(observation), "action", None, lambda c: _check(c.content, observation, n), reask=self._reask
        )
        if action is None:  # the documented fallback
            action = Pass()
        info.update(
            action=action.text(), fallbacks=int(info["fallback"]), reasks=len(info["invalid_replies"]), decisions=1
        )
        return action_index(action, n), info


class VerifiedLLMPlayer(LLMPlayer):
    """An LLM player screened by one of the paper's verifiers: the first of ``k`` candidates it accepts
    (privileged: it reads the game to verify; see the module docstring).

    Args:
        verifier: ``affordance``, ``communication``, ``reasoning`` or ``none`` (any action of the grammar).
        k: candidates drawn per decision (one request with ``n=k`` where the endpoint takes it, else ``k``
            requests with distinct seeds; at temperature 0 they are alike on a deterministic endpoint:
            the module docstring says what k samples are).
        model, base_url, temperature, max_tokens, seed, prompt_version, reasoning: as for :class:`LLMPlayer`
            (``max_reasks`` is accepted and unused: candidates are screened, not asked again).
    """

    def __init__(
        self,
        model: str = "gpt-4.1",
        base_url: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        prompt_version: str = "v1",
        max_reasks: int = 2,
        reasoning: bool = False,
        verifier: str | None = "reasoning",
        k: int = 4,
    ) -> None:
        super().__init__(model, base_url, temperature, max_tokens, seed, prompt_version, max_reasks, reasoning)
        verifier = "none" if verifier is None else verifier  # a spec's "verifier=none" parses as None
        if verifier not in VERIFIER_NAMES:
            raise ValueError(f"verifier must be one of {', '.join(VERIFIER_NAMES)}, got {verifier!r}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be an integer in [1, {MAX_K}], got {k!r}")
        self.verifier, self.k = verifier, k

    def __repr__(self) -> str:
        where = f"model={self.model!r}, base_url={self.client.base_url!r}"
        return f"{self.name}({where}, verifier={self.verifier!r}, k={self.k})"

    def act(self, observation: Mapping[str, Any]) -> Any:
        raise TypeError("a verifier reads the game: the runner calls `await aact_privileged(observation, env)`")

    async def aact(self, observation: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        raise TypeError("a verifier reads the game: the runner calls `await aact_privileged(observation, env)`")

    async def aact_privileged(self, observation: Mapping[str, Any], env: Any) -> tuple[int, dict[str, Any]]:
        """The first of ``k`` candidates the verifier accepts, else the least bad; (action index, info)."""
        game = getattr(env, "unwrapped", env).game
        n = game.puzzle.n
        info = new_info(self.model)
        try:
            answers = await self.client.complete_many(
                self.messages(observation),
                self.k,
                schema_name="action",
                schema=None,
                prompt_version=self.prompt_version,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                seed=self.seed,
            )
        except LLMUnavailableError as err:
            unavailable(info, err)  # (with what the samples that were answered cost)
            raise PolicyError(f"{self.name}: {err}", info=info) from None
        for c in answers:
            account(info, c)
        info["attempts"] = sum(c.sample for c in answers)  # (requests that gave no sample are in transport)
        if self.k > 1 and self.temperature == 0:
            info["greedy_candidates"] = True
        order = list(VERIFIERS) if self.verifier != "none" else []
        upto = order.index(self.verifier) + 1 if order else 0
        candidates: list[Action | None] = []
        screened: list[tuple[int, ...]] = []
        chosen: int | None = None
        replies = [(t, c.oversize_error) for c in answers for t in c.texts]
        for text, oversize in replies:
            try:
                if oversize is not None:  # (its text was not read: no action)
                    raise GrammarError(oversize)
                action: Action | None = read_action(text, n)
            except GrammarError as err:
                action = None
                info["invalid_replies"].append(str(err))
            candidates.append(action)
            if action is None:
                screened.append((-1,) * max(upto, 1))
                continue
            results = verdicts(game, action, order[:upto])
            screened.append(results)
            if all(results):
                chosen = len(candidates) - 1
                break
        if chosen is None:
            chosen = least_bad(screened)
        played = candidates[chosen]
        if played is None:  # no candidate was an action at all
            played = Pass()
            info["fallback"] = True
            info["fallback_reason"] = f"no action among {len(candidates)} candidates: {info['invalid_replies'][-1]}"
        try:
            index = action_index(played, n)
        except ValueError:  # (a move from a bin to itself: no index; the game would reject it anyway)
            played, index = Pass(), action_index(Pass(), n)
        info.update(
            action=played.text(),
            fallbacks=int(info["fallback"]),
            reasks=0,
            decisions=1,
            verifier_interventions=int(not (candidates[0] is not None and all(screened[0]))),
            verifier_candidates=len(candidates),
        )
        return index, info


def player_factory(role: str) -> Callable[..., LLMPlayer]:
    """The ``llm`` policy of one seat: :class:`LLMPlayer`, or :class:`VerifiedLLMPlayer` when ``verifier``
    or ``k`` is given."""
    attrs = {"role": role, "__module__": __name__}
    plain = type("LLMPlayer", (LLMPlayer,), {**attrs, "__doc__": LLMPlayer.__doc__})
    verified = type("VerifiedLLMPlayer", (VerifiedLLMPlayer,), {**attrs, "__doc__": VerifiedLLMPlayer.__doc__})

    def llm(
        model: str = "gpt-4.1",
        base_url: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        seed: int | None = None,
        prompt_version: str = "v1",
        max_reasks: int = 2,
        reasoning: bool = False,
        verifier: str | None = "",
        k: int | None = None,
    ) -> LLMPlayer:
        """An LLM player (text observation in, one action out); with verifier=... and/or k=..., screened by a
        verifier over k candidates (``verifier=none``: the first candidate that is an action)."""
        common = {
            "model": model,
            "base_url": base_url,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "prompt_version": prompt_version,
            "max_reasks": max_reasks,
            "reasoning": reasoning,
        }
        if verifier == "" and k is None:  # ("" is "not given": the spec parser reads verifier=none as None)
            return plain(**common)  # type: ignore[no-any-return]
        chosen = None if verifier == "" else verifier
        return verified(**common, verifier=chosen, k=4 if k is None else k)  # type: ignore[no-any-return]

    llm.canonical_parameters = LLMPlayer.canonical_parameters  # type: ignore[attr-defined]
    return llm
