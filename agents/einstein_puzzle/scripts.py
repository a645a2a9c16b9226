"""Scripted participants of the Einstein puzzle for the local test server (:mod:`agents.fake_server`).

The prompt holds nothing but the player's text observation, so a participant works as a model would:
it reads the text. :func:`read_text` re-derives what the player knows from it — its seat, the mode,
its constraints and the answers it received, the board, the history — and :func:`good_action` plays
sensibly from that (answer the partner's ask when it can; place what it can infer; hand objects
bound for the other row to the common bin; share its constraints; ask about what it cannot infer;
in the ``none`` mode, guess), so games with a good partner are usually won.

* :func:`good_script` — answers with :func:`good_action` (with ``ACTION:`` and some thinking when the
  prompt asks for reasoning); with ``n > 1`` every sample is that action;
* :func:`bad_script` — never one clean action: prose around the action, an action that is not legal,
  two actions, an empty reply, a number out of range (by turns, decided by the prompt so concurrency
  cannot reorder it); with ``fix_on_reask`` it answers a re-ask with the good action;
* :func:`candidates_script` — for ``n > 1`` requests: the first sample is not legal, the others good
  (a verifier has something to correct).

The fake server's hostile modes (429s, 5xx, timeouts, malformed bodies) are
:class:`agents.fake_server.ChaosScript` with ``answer=good_script``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from agents.fake_server import Reply
from eq_env.einstein_puzzle.rules import (
    BIN_NAMES,
    COMMON,
    GOAL_BINS,
    Constraint,
    Knowledge,
    Move,
    row_bins,
    start_bin,
)

__all__ = ["Seen", "bad_script", "candidates_script", "good_action", "good_script", "read_text"]

_RELATIONS = {"the same bin": 0, "the same row, different columns": 1, "the same column, different rows": 2,
              "diagonal bins": 3}  # fmt: skip
_GROUNDING = re.compile(r"object (\d+) goes in (\w+)$")
_RELATION = re.compile(r"object (\d+) and object (\d+) go in (.+)$")
_EVENT = re.compile(r"^- turn \d+, player_(\d) \(\w+\): (.*?)(?: -- (\w+): .*)?$", re.M)


@dataclass
class Seen:
    """What a player's text observation says (see :func:`read_text`)."""

    player: int
    mode: str
    n: int
    location: dict[int, int]
    own: dict[int, Constraint] = field(default_factory=dict)  # constraints the player holds itself
    received: dict[int, Constraint] = field(default_factory=dict)  # shared by the partner
    told: dict[int, int] = field(default_factory=dict)
    shared: set[int] = field(default_factory=set)  # constraints the player shared
    asked: set[int] = field(default_factory=set)  # objects the player asked about
    rejected: set[tuple[int, int]] = field(default_factory=set)  # (object, goal bin) refused
    partner_asked: int | None = None

    def knowledge(self) -> Knowledge:
        constraints = [*self.own.values(), *self.received.values()]
        facts = [(c.a, c.code) for c in constraints if c.b is None]
        facts += [(o, b) for o, b in self.location.items() if b in GOAL_BINS] + list(self.told.items())
        return Knowledge(self.n, [c for c in constraints if c.b is not None], facts, sorted(self.rejected))


def _section(text: str, title: str) -> str:
    return text.partition(title)[2].partition("\n\n")[0]


def read_text(text: str) -> Seen:
    """The player's view, re-derived from its text observation (:func:`eq_env.einstein_puzzle.text.describe`)."""
    player = int(re.search(r"You are player_(\d)", text).group(1))  # type: ignore[union-attr]
    mode = re.search(r"^Communication: (\w+)\.", text, re.M).group(1)  # type: ignore[union-attr]
    location: dict[int, int] = {}
    for name, objects in re.findall(r"^- (\w+): (.*)$", _section(text, "The board (objects in each bin):"), re.M):
        if objects != "empty":
            location.update({int(o): BIN_NAMES.index(name) for o in objects.split(", ")})
    seen = Seen(player, mode, len(location), location)
    knowledge = _section(text, "Your knowledge:")
    for k, body in re.findall(r"^- constraint (\d+): (.*)$", knowledge, re.M):
        partner = body.endswith(" (shared by your partner)")
        body = body.removesuffix(" (shared by your partner)")
        if m := _GROUNDING.match(body):
            c = Constraint(int(m.group(1)), None, BIN_NAMES.index(m.group(2)))
        elif m := _RELATION.match(body):
            c = Constraint(int(m.group(1)), int(m.group(2)), _RELATIONS[m.group(3)])
        else:
            continue
        (seen.received if partner else seen.own)[int(k)] = c
    for obj, name in re.findall(r"^- object (\d+) goes in (\w+)$", knowledge, re.M):
        seen.told[int(obj)] = BIN_NAMES.index(name)
    for who, action, outcome in _EVENT.findall(_section(text, "History (failed actions marked):")):
        mine = int(who) == player
        words = action.split()
        if mine and words[0] == "share" and not outcome:
            seen.shared.add(int(words[1]))
        if mine and words[0] == "ask":
            seen.asked.add(int(words[1]))
        if words[0] == "move" and outcome == "REJECTED" and words[-1] in BIN_NAMES[:4]:
            seen.rejected.add((int(words[1]), BIN_NAMES.index(words[-1])))
    if m := re.search(r"Your partner just asked about object (\d+)\.", text):
        seen.partner_asked = int(m.group(1))
    return seen


def good_action(text: str) -> str:
    """A sensible action for the player whose text observation is ``text`` (see the module docstring)."""
    s = read_text(text)
    p, know = s.player, s.knowledge()
    mine, theirs = sum(1 << b for b in row_bins(p)), sum(1 << b for b in row_bins(1 - p))
    talk, asks = s.mode != "none", s.mode in ("provide_and_seek", "seek_only")
    if asks and s.partner_asked is not None and (goal := know.goal(s.partner_asked)) is not None:
        return f"answer {s.partner_asked} {BIN_NAMES[goal]}"
    movable = [o for o in range(s.n) if s.location[o] in (start_bin(p), COMMON)]
    for obj in movable:  # place what it can infer, then hand over what belongs to the other row
        goal = know.goal(obj)
        if goal is not None and mine >> goal & 1:
            return Move(obj, s.location[obj], goal).text()
    for obj in movable:
        if s.location[obj] == start_bin(p) and not know.possible(obj) & mine:
            return f"move {obj} from {BIN_NAMES[start_bin(p)]} to common"
    if s.mode == "seek_only" and s.partner_asked is not None:
        for k, c in s.own.items():
            if k not in s.shared and c.b is not None and s.partner_asked in c.objects():
                return f"share {k}"
    if s.mode in ("provide_and_seek", "provide_only"):
        for k, c in s.own.items():
            if k not in s.shared and c.b is not None and any(s.location[o] not in GOAL_BINS for o in c.objects()):
                return f"share {k}"
    if asks:
        for obj in movable:
            if know.goal(obj) is None and obj not in s.asked:
                return f"ask {obj}"
    if not talk:  # no communication: guess (the first bin of one's row still possible, else hand over)
        for obj in movable:
            possible = know.possible(obj)
            if possible & mine:
                return Move(obj, s.location[obj], next(b for b in row_bins(p) if possible >> b & 1)).text()
            if s.location[obj] == start_bin(p) and possible & theirs:
                return f"move {obj} from {BIN_NAMES[start_bin(p)]} to common"
    return "pass"


def _prompt(request: dict[str, Any]) -> str:
    """The user prompt of a request (the first user message: the observation)."""
    return next((str(m.get("content") or "") for m in request.get("messages", []) if m.get("role") == "user"), "")


def _observation(prompt: str) -> str:
    return prompt.partition("\n\n")[2].rpartition("\n\n## Your reply")[0]


def _reasoning(request: dict[str, Any]) -> bool:
    return 'line "ACTION: <action>"' in _prompt(request)


def _reasked(request: dict[str, Any]) -> bool:
    return len(request.get("messages", [])) > 2


def good_script(request: dict[str, Any], n: int) -> Reply:
    """Answer as a good player (:func:`good_action`), thinking first when the prompt asks for reasoning."""
    action = good_action(_observation(_prompt(request)))
    if _reasoning(request):
        return Reply(content=f"I list what I can infer and what my partner needs.\nThen the best move is clear.\n"
                     f"ACTION: {action}")  # fmt: skip
    return Reply(content=action)


_BAD = ("prose", "illegal", "two", "empty", "range")


def _bad_reply(request: dict[str, Any], text: str, salt: int = 0) -> str:
    kind = _BAD[(int(hashlib.sha256(json.dumps(request.get("messages", [])[:2]).encode()).hexdigest(), 16) + salt)
                % len(_BAD)]  # fmt: skip
    s = read_text(text)
    other = start_bin(1 - s.player)
    if kind == "prose":
        return f"I think the right thing to do is: {good_action(text)}. Good luck!"
    if kind == "illegal":  # (the partner's start bin is out of reach)
        return f"move 0 from {BIN_NAMES[other]} to common"
    if kind == "two":
        return f"{good_action(text)}\npass"
    if kind == "empty":
        return ""
    return f"ask {s.n + 7}"


def bad_script(fix_on_reask: bool = False) -> Any:
    """A bad player (see the module docstring); with ``fix_on_reask``, good once asked again."""

    def script(request: dict[str, Any], n: int) -> Reply:
        text = _observation(_prompt(request))
        if fix_on_reask and _reasked(request):
            return Reply(content=good_action(text))
        return Reply(content=_bad_reply(request, text, len(request.get("messages", []))))

    return script


def candidates_script(request: dict[str, Any], n: int) -> Reply:
    """``n > 1`` samples: the first one not legal (the partner's start bin is out of reach), the rest good."""
    text = _observation(_prompt(request))
    samples = request.get("n", 1) if isinstance(request.get("n"), int) else 1
    bad = f"move 0 from {BIN_NAMES[start_bin(1 - read_text(text).player)]} to common"
    good = good_action(text)
    return Reply(content=bad, choices=[bad] + [good] * (samples - 1))
