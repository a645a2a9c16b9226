"""Fine-tuning demonstrations of the exchange–audit game: its two LLM roles, as chat-format lines.

:func:`demonstrations` plays the states of a split through the environment and yields one line per decision
an LLM policy of the game would be asked for, in TRL ``SFTTrainer``'s (and OpenAI's) chat format::

    {"messages": [{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", "content": "{...}"}],
     "meta": {"split": "train", "seed": 1000, "episode": 3, "role": "proposer", "prompt_version": "v1",
              "game": "exchange-audit", "verified": true, "reason": "", "row": "artifacts, q=0.3", ...}}

**The prompts** are exactly what the LLM policies send: the system and user messages of
:func:`~eq_env.agents.exchange_audit.policies.render_proposer_prompt` (``LLMProposer``) and
:func:`~eq_env.agents.exchange_audit.policies.render_validator_prompt` (``LLMValidator``), on the view
:func:`~eq_env.exchange_audit.spaces.decode_proposer_observation` (``decode_validator_observation``) makes of the
environment's own observation, as the policies decode it. The configurations are those of ``eq-env bench``'s
two tasks (:mod:`eq_env.studies.exchange_audit.bench`, battery ``bench-v1``): the proposer's preset ``paper`` at
each q of the paper's grid and Table 2's temptation scenario (V = 2, L = 1, q = 0.3), against the rule
validator; the validator's preset ``paper_scripted`` at q = 0.3 after each of the task's scripted proposers
(honest, strategic, injecting; 18 words).

**The replies** are what a perfect player sends, as one JSON object of the role's reply schema
(:mod:`eq_env.agents.exchange_audit.schema`); every line's reply is read back by the policy's own parser
(:func:`~eq_env.agents.exchange_audit.schema.parse_proposer_reply`,
:func:`~eq_env.agents.exchange_audit.schema.parse_validator_reply`) and must give the intended action — a
line it refuses is a bug, and raises.

* **proposer** — the game's best response to the rule validator in that configuration
  (:func:`~eq_env.exchange_audit.equilibrium.proposer_best_response`: the best of the 648 discrete artifacts
  per cell of the proposer's observation, exact over the audit; honest — ``honest:words=0``, claims judged
  from its observation — where no artifact does better, as
  :class:`~eq_env.studies.exchange_audit.inspection.BestResponseProposer` plays it). The search runs on
  :data:`SEARCH_EPISODES` episodes of seed :data:`SEARCH_SEED`, a seed neither split nor the bench plays. The
  reply reports the observed numbers exactly (or the shaded ones the artifact chose), its claims, and the
  artifact's words of text (0: text costs α a word and the rule validator does not read it). ``meta.target``
  says ``best_response`` (a cell where the search deviates from honesty: a bare NO_TRADE at baseline,
  misreports under temptation) or ``honest``.
* **validator** — the paper's rule engine's decision (:func:`~eq_env.exchange_audit.rules.rule_decision`, the
  gate of ``LLMValidator``), with a one-sentence reason naming the branch of the rule that decided. Only
  requests are asked (after a NO_TRADE the validator has one legal action and the policy is not asked:
  counted as ``not_asked``); a prompt two proposers of the same state send word for word (the strategic and
  injecting proposers' honest requests are the honest proposer's) is one line, ``meta.proposers`` naming all.

**verified** (``meta.verified``, ``meta.reason`` saying why not) is the game's own verdict on the line:
proposer — a full audit (every checkable claim, against the truth) of the parsed submission passes, or, for a
NO_TRADE, fails on no claim, and a request reports the position as observed (no misreport); validator — the
decision is right about the truth (APPROVE iff the trade is compliant): the rule engine approves an unaudited
lie whose numbers and claims it cannot check, and may block a compliant trade. Lines that fail are kept and
counted (:class:`DemoStats`), so they can be filtered out.

**meta**, besides ``split``, ``seed``, ``episode``, ``role``, ``prompt_version``, ``game``, ``verified`` and
``reason``: the configuration (``preset``, ``q``, ``V``, ``L``, ``B``), the truth (``ambiguous``,
``compliant``); proposer — ``row`` and ``scenario`` (the bench's), ``target``, ``artifact`` (described),
``action``, ``misreport``, ``full_audit`` (what an audit of every claim finds: PASS, FAIL, INCONCLUSIVE);
validator — ``proposers``, ``decision``, ``audit`` (the episode's audit as the validator sees it),
``injected`` (the text carries the injecting proposer's instruction).

**Splits, disjoint from the benchmark.** The states of a seed are episode i of seed s,
``reset(seed=s, options={"episode": i})``: the same position, observation noise and audit coin in every
configuration (:class:`~eq_env.exchange_audit.rules.DrawStream`).

* ``test``: the bench's own states: the first ``episodes`` (at most the full battery's 200) episodes of each
  of the full battery's seeds 0–4 (the quick battery's 3 seeds × 20 episodes are among them;
  ``eq-env reproduce`` plays the same 5 × 200 by default);
* ``train`` (default): episodes 0, 1, … of ``seed`` (default :data:`TRAIN_SEED`), skipping every episode that is
  one of the bench's states (:func:`bench_states`: the quick and the full battery of both tasks, and
  ``eq-env reproduce``'s default seeds and episodes, computed from their own code) or whose draws — the
  uniforms and normals that make its position, noise and audit — equal those of one (compared exactly), so no
  training state is a test state whatever ``seed`` is; skipped episodes are counted (``bench_collisions``).
  With the default seed, outside the bench's, none is skipped.

The same arguments always give the same lines (the search and every draw are seeded; no clock is read).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from eq_env.core.demos import SPLITS, RoleDemoStats, check_request

__all__ = [
    "DEFAULT_EPISODES",
    "GAME",
    "ROLES",
    "SEARCH_EPISODES",
    "SEARCH_SEED",
    "SPLITS",
    "TRAIN_SEED",
    "DemoStats",
    "ProposerCondition",
    "ValidatorCondition",
    "bench_states",
    "demonstrations",
    "proposer_conditions",
    "rule_reason",
    "validator_conditions",
]

GAME = "exchange-audit"
ROLES = ("proposer", "validator")
TRAIN_SEED = 1000  # the train split's default seed: none of the bench's (0-4)
DEFAULT_EPISODES = 200  # states per seed (the full battery plays 200 per seed)
SEARCH_SEED = 9917  # the best-response search's seed: neither split's, nor the bench's
SEARCH_EPISODES = 40_000  # the search's episodes (half choose the artifact per cell, half measure it)
MAX_EPISODES = 1_000_000
PROPOSER_AGENT, VALIDATOR_AGENT = "proposer_0", "validator_0"
_DEMO_MODEL = "demo"  # the model name the bench's conditions are written for (only their configurations are read)


class DemoStats(RoleDemoStats):
    """What a :func:`demonstrations` run did: lines per role, lines the game's checks flag (``unverified``,
    per role), train episodes skipped as bench states (``bench_collisions``), validator decisions not asked
    (a NO_TRADE), prompts merged (the same prompt from two proposers of one state), and whether the test
    split was clipped to the bench's episodes."""

    ROLES = ROLES
    NOT_ASKED = "validator decision(s) not asked (NO_TRADE)"
    MERGED = "repeated validator prompt(s) merged"
    COLLISIONS = "train episode(s) skipped: bench states"
    CLIPPED = "test split clipped to the bench's episodes per seed"


# ---------------------------------------------------------------------------
# The bench's conditions and states
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ProposerCondition:
    """One configuration the proposer task plays (the artifacts regime; action only asks the same prompt)."""

    row: str
    scenario: str
    config: Any  # ExchangeAuditConfig


@dataclass(frozen=True)
class ValidatorCondition:
    """One scripted proposer the validator task plays against (gated and ungated ask the same prompt)."""

    proposer: str  # honest, strategic, injecting
    spec: str
    config: Any  # ExchangeAuditConfig


@functools.cache
def proposer_conditions() -> tuple[ProposerCondition, ...]:
    """The proposer task's configurations in the full battery (its q grid and temptation), in its order."""
    from eq_env.core.bench import BenchModel
    from eq_env.studies.exchange_audit import bench

    out = []
    for c in bench.proposer_conditions(BenchModel(_DEMO_MODEL), quick=False):
        if c.label("regime") == "artifacts":  # (action only: the same request, its reply stripped)
            out.append(ProposerCondition(str(c.label("row")), str(c.label("scenario")), c.config))
    return tuple(out)


@functools.cache
def validator_conditions() -> tuple[ValidatorCondition, ...]:
    """The validator task's scripted proposers (its configuration; the gate is not in the prompt)."""
    from eq_env.core.bench import BenchModel
    from eq_env.studies.exchange_audit import bench

    out: dict[str, ValidatorCondition] = {}
    for c in bench.validator_conditions(BenchModel(_DEMO_MODEL), quick=False):
        who = str(c.label("proposer"))
        out.setdefault(who, ValidatorCondition(who, c.policy("proposer"), c.config))
    return tuple(out.values())


def _bench_runs(role: str) -> list[tuple[tuple[int, ...], int]]:
    """(seeds, episodes per seed) of everything that plays ``role``'s states: both batteries of the role's
    bench task, and ``eq-env reproduce``'s defaults."""
    from eq_env.core.bench import BenchModel
    from eq_env.studies.exchange_audit import bench
    from eq_env.studies.exchange_audit.reproduce import ReproduceOptions

    conditions = bench.proposer_conditions if role == "proposer" else bench.validator_conditions
    runs = []
    for quick in (True, False):
        episodes = max(c.episodes for c in conditions(BenchModel(_DEMO_MODEL), quick))
        runs.append((tuple(bench.seeds(quick)), episodes))
    opts = ReproduceOptions()
    runs.append((tuple(range(opts.first_seed, opts.first_seed + opts.seeds)), opts.episodes))
    return runs


@functools.cache
def bench_states(role: str | None = None) -> frozenset[tuple[int, int]]:
    """The (seed, episode) pairs the bench and ``eq-env reproduce`` play for ``role`` (None: either role)."""
    if role is not None and role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    roles = ROLES if role is None else (role,)
    return frozenset((s, i) for r in roles for seeds, n in _bench_runs(r) for s in seeds for i in range(n))


def _draws_key(state_u: Any, noise_z: Any, audit_u: Any) -> bytes:
    return np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in (state_u, noise_z, audit_u)]).tobytes()


@functools.cache
def _bench_draws() -> frozenset[bytes]:
    """The draws of every bench state (:func:`bench_states`), as bytes: a train episode equal to one is skipped."""
    from eq_env.exchange_audit.rules import DrawStream

    by_seed: dict[int, int] = {}
    for s, i in bench_states():
        by_seed[s] = max(by_seed.get(s, 0), i + 1)
    out: set[bytes] = set()
    for s, n in by_seed.items():
        state_u, noise_z, audit_u = DrawStream(s).batch(n)
        out.update(_draws_key(state_u[i], noise_z[i], audit_u[i]) for i in range(n) if (s, i) in bench_states())
    return frozenset(out)


def _test_episodes(role: str) -> tuple[tuple[int, ...], int]:
    """The test split's seeds and episodes per seed: the role's full battery."""
    from eq_env.core.bench import BenchModel
    from eq_env.studies.exchange_audit import bench

    conditions = bench.proposer_conditions if role == "proposer" else bench.validator_conditions
    return tuple(bench.seeds(False)), max(c.episodes for c in conditions(BenchModel(_DEMO_MODEL), False))


def _states(split: str, role: str, episodes: int, seed: int, stats: DemoStats) -> Iterator[tuple[int, int]]:
    """The (seed, episode) pairs the split plays for ``role``, seed by seed, in episode order."""
    from eq_env.exchange_audit.rules import DrawStream

    if split == "test":
        seeds, per_seed = _test_episodes(role)
        stats.test_clipped = stats.test_clipped or episodes > per_seed
        for s in seeds:
            for i in range(min(episodes, per_seed)):
                yield s, i
        return
    pairs, draws = bench_states(), _bench_draws()
    stream, found, i = DrawStream(seed), 0, 0
    while found < episodes:
        d = stream.next()
        if (seed, i) in pairs or _draws_key(d.state_u, d.noise_z, d.audit_u) in draws:
            stats.bench_collisions += 1
        else:
            found += 1
            yield seed, i
        i += 1


# ---------------------------------------------------------------------------
# The proposer: the best response
# ---------------------------------------------------------------------------
def _honest_spec(config: Any) -> str:
    """The best-response search's honest reference (where no artifact does better)."""
    return "honest:claims_from=truth,words=0" if config.reveal_compliance else "honest:words=0"


@functools.cache
def _best_response_tables(search_episodes: int) -> dict[str, np.ndarray]:
    """Row → the best response's artifact per cell of the proposer's observation (-1: honest), for every
    proposer condition; the q grid in one search (the same results as one search per q)."""
    from eq_env.exchange_audit.equilibrium import proposer_best_response, proposer_best_responses

    conditions = proposer_conditions()
    grid = [c for c in conditions if c.scenario == "baseline"]
    tables: dict[str, np.ndarray] = {}
    if grid:
        base = grid[0].config
        assert all(c.config == base.replace(q=c.config.q) for c in grid)
        found = proposer_best_responses(
            base, [c.config.q for c in grid], "rule", episodes=search_episodes, seed=SEARCH_SEED
        )
        tables.update((c.row, br.table) for c, br in zip(grid, found, strict=True))
    for c in conditions:
        if c.row not in tables:
            br = proposer_best_response(c.config, "rule", episodes=search_episodes, seed=SEARCH_SEED)
            tables[c.row] = br.table
    return tables


def _cell(view: Any) -> int:
    """The best-response search's cell of one proposer view."""
    from eq_env.exchange_audit.equilibrium import _proposer_cells

    pub = view.public

    def known(value: bool | None) -> np.ndarray | None:
        return None if value is None else np.array([bool(value)])

    one = SimpleNamespace(
        n=1,
        intent=np.array([int(view.intent)], dtype=np.int8),
        known_risk_within_limit=known(view.known_risk_within_limit),
        known_net_delta_bounded=known(view.known_net_delta_bounded),
        risk_limit=np.array([pub.risk_limit]),
        delta_limit=pub.delta_limit,
        observed_risk=np.array([view.observed_risk]),
        observed_net_delta=np.array([view.observed_net_delta]),
    )
    return int(_proposer_cells(one)[0])


def _within_bounds(p: Any) -> Any:
    """The proposal with its numbers within the action space's bounds (as the reply schema and the misreport
    measure take them)."""
    from eq_env.exchange_audit.rules import Proposal
    from eq_env.exchange_audit.spaces import NUMBER_BOUNDS

    low, high = (b.tolist() for b in NUMBER_BOUNDS)
    numbers = [min(max(float(x), lo), hi) for x, lo, hi in zip(_numbers(p), low, high, strict=True)]
    return Proposal(p.intent, *numbers)


def _clipped(sub: Any) -> Any:
    """The submission with its proposal :func:`_within_bounds`."""
    from eq_env.exchange_audit.rules import Submission

    return Submission(sub.action, _within_bounds(sub.proposal), sub.artifact)


def _best_submission(view: Any, table: np.ndarray, honest: Any) -> tuple[Any, str, str]:
    """The best response's submission for ``view`` (with its text written), its source and its description."""
    from eq_env.baselines.exchange_audit.scripted import explanation_text
    from eq_env.exchange_audit.features import all_artifacts, artifact_submission, describe_artifact
    from eq_env.exchange_audit.rules import Artifact, Submission, estimated_tokens

    cell = _cell(view)
    choice = int(table[cell]) if cell < len(table) else -1
    if choice < 0:
        sub = honest.submission(view)
        words = sub.artifact.words
        source, described = "honest", f"honest ({honest!r})"
    else:
        artifacts = all_artifacts(view.public.claim_schema)
        sub = artifact_submission(view, artifacts[choice])
        words = sub.artifact.words
        source, described = "best_response", describe_artifact(artifacts[choice], view.public.claim_schema)
    claims = sub.artifact.claims
    if words and not sub.artifact.text:  # (a numeric artifact pays for words it does not write: an LLM writes them)
        believed = claims.risk_within_limit is True and claims.net_delta_bounded is True
        text = explanation_text(view, sub.proposal, believed, words)
        sub = Submission(sub.action, sub.proposal, Artifact(claims, text, words, estimated_tokens(words)))
    return _clipped(sub), source, described


def _proposer_reply(sub: Any) -> str:
    c, p = sub.artifact.claims, sub.proposal
    reply = {
        "action": sub.action.name,
        "proposal": {"intent": p.intent.name, "risk": p.risk, "net_delta": p.net_delta, "hedge_size": p.hedge_size},
        "claims": {
            "intent": None if c.intent is None else c.intent.name,
            "risk_within_limit": c.risk_within_limit,
            "net_delta_bounded": c.net_delta_bounded,
            "risk_metric": c.risk_metric,
            "confidence": c.confidence,
        },
        "text": sub.artifact.text,
    }
    return json.dumps(reply)


def _proposer_verdict(sub: Any, view: Any, state: Any, config: Any) -> tuple[str, bool, str]:
    """(the full audit's outcome, misreported, why the line is not verified: "" when it is)."""
    from eq_env.exchange_audit.rules import N_AUDIT_UNIFORMS, AuditOutcome, ProposerAction, run_audit

    full = config.replace(q=1.0, B=4)  # every checkable claim, against the truth
    audit = run_audit(sub, state, (0.0,) * N_AUDIT_UNIFORMS, full)
    request = sub.action is ProposerAction.REQUEST_APPROVAL
    observed = _within_bounds(view.observed_proposal)
    p = sub.proposal
    misreport = request and (
        p.intent != state.intent or any(abs(a - b) > 1e-9 for a, b in zip(_numbers(p), _numbers(observed), strict=True))
    )
    problems = []
    if audit.outcome is AuditOutcome.FAIL:
        problems.append(f"a full audit fails: {', '.join(audit.failed)} false")
    elif request and audit.outcome is AuditOutcome.INCONCLUSIVE:
        problems.append("a full audit is inconclusive: the request lacks a required claim")
    if misreport:
        problems.append("a misreport: the reported position is not the observed one")
    return audit.outcome.name, misreport, "; ".join(problems)


def _numbers(p: Any) -> tuple[float, float, float]:
    return p.risk, p.net_delta, p.hedge_size


def _proposer_lines(
    split: str, episodes: int, seed: int, version: str, search_episodes: int, stats: DemoStats
) -> Iterator[dict[str, Any]]:
    from eq_env import exchange_audit_v0
    from eq_env.agents.exchange_audit.policies import render_proposer_prompt
    from eq_env.agents.exchange_audit.schema import parse_proposer_reply
    from eq_env.core.policy import make_policy
    from eq_env.exchange_audit.spaces import decode_proposer_observation

    conditions = proposer_conditions()
    tables = _best_response_tables(search_episodes)
    envs = [exchange_audit_v0.env(config=c.config) for c in conditions]
    honest = [make_policy(_honest_spec(c.config), "proposer") for c in conditions]
    for s, i in _states(split, "proposer", episodes, seed, stats):
        for c, env, reference in zip(conditions, envs, honest, strict=True):
            env.reset(seed=s, options={"episode": i})
            view = decode_proposer_observation(env.observe(PROPOSER_AGENT))
            state = env.unwrapped.game.state
            messages = render_proposer_prompt(view, version)
            sub, source, described = _best_submission(view, tables[c.row], reference)
            reply = _proposer_reply(sub)
            pub = view.public
            parsed = parse_proposer_reply(reply, pub.max_words, pub.max_text_chars, claim_schema=pub.claim_schema)
            if (parsed.action, parsed.proposal, parsed.artifact.claims, parsed.artifact.words) != (
                sub.action,
                sub.proposal,
                sub.artifact.claims,
                sub.artifact.words,
            ):
                raise AssertionError(f"the proposer's parser reads {parsed!r} from the reply written for {sub!r}")
            audit, misreport, reason = _proposer_verdict(parsed, view, state, c.config)
            messages.append({"role": "assistant", "content": reply})
            meta = {
                "split": split,
                "seed": s,
                "episode": i,
                "role": "proposer",
                "prompt_version": version,
                "game": GAME,
                "verified": not reason,
                "reason": reason,
                "row": c.row,
                "scenario": c.scenario,
                "preset": "paper",
                "q": c.config.q,
                "V": c.config.V,
                "L": c.config.L,
                "B": c.config.checks_per_audit,
                "target": source,
                "artifact": described,
                "action": sub.action.name,
                "misreport": misreport,
                "full_audit": audit,
                "ambiguous": state.ambiguous,
                "compliant": state.compliant,
            }
            stats.lines["proposer"] += 1
            stats.unverified["proposer"] += bool(reason)
            yield {"messages": messages, "meta": meta}


# ---------------------------------------------------------------------------
# The validator: the rule engine
# ---------------------------------------------------------------------------
def _audit_reason(audit: Any) -> str:
    from eq_env.exchange_audit.rules import AuditOutcome

    if audit.outcome is AuditOutcome.FAIL:
        return f"The audit failed ({', '.join(audit.failed)} false), so the trade is blocked."
    if audit.outcome is AuditOutcome.INCONCLUSIVE:
        return "The audit was inconclusive (a required claim was missing), so the trade is blocked."
    if audit.revealed_compliant:
        return "The audit passed and established that the trade is truly compliant."
    return "The audit passed but established that the trade is not compliant, so it is blocked."


def rule_reason(view: Any) -> tuple[Any, str]:
    """The rule engine's decision on ``view`` (:func:`~eq_env.exchange_audit.rules.rule_decision`) and a sentence
    naming the branch of the rule that gives it (checked against the rule engine itself)."""
    from eq_env.exchange_audit.rules import Decision, ProposerAction, is_comfortable, rule_decision

    sub, audit, pub = view.submission, view.audit, view.public
    p = sub.proposal
    if sub.action is ProposerAction.NO_TRADE:
        decision, reason = Decision.BLOCK, "No trade was requested: there is nothing to approve."
    elif view.ambiguous:
        comfortable = is_comfortable(p, pub)
        if not sub.artifact.has_explanation and not comfortable:
            decision = Decision.BLOCK
            reason = (
                "A borderline trade with no explanation (no claims, no text) and no safe margin to the limits "
                "is blocked."
            )
        elif audit.audited:
            decision, reason = rule_decision(view), _audit_reason(audit)
        elif comfortable:
            decision = Decision.APPROVE
            reason = (
                "Not audited; the reported hedge keeps more than the safe margin of "
                f"{pub.safe_margin:g} to both limits."
            )
        elif sub.artifact.claims.assert_compliance:
            decision = Decision.APPROVE
            reason = "Not audited; the typed claims assert a hedge within the risk limit with its net delta bounded."
        else:
            decision = Decision.BLOCK
            reason = "Not audited; a borderline trade without a safe margin or claims asserting compliance is blocked."
    elif audit.audited:
        decision, reason = rule_decision(view), _audit_reason(audit)
    elif p.risk <= pub.risk_limit and abs(p.net_delta) <= pub.delta_limit:
        decision = Decision.APPROVE
        reason = (
            f"Not audited; the reported risk {p.risk:.4f} is within the limit {pub.risk_limit:.4f} and the net "
            f"delta {p.net_delta:+.4f} within ±{pub.delta_limit:g}."
        )
    else:
        decision = Decision.BLOCK
        breach = "risk" if p.risk > pub.risk_limit else "net delta"
        reason = f"Not audited; the reported {breach} breaches its limit."
    if decision is not rule_decision(view):
        raise AssertionError(f"rule_reason gives {decision.name}, the rule engine {rule_decision(view).name}")
    return decision, reason


def _validator_lines(split: str, episodes: int, seed: int, version: str, stats: DemoStats) -> Iterator[dict[str, Any]]:
    from eq_env import exchange_audit_v0
    from eq_env.agents.exchange_audit.policies import render_validator_prompt
    from eq_env.agents.exchange_audit.schema import parse_validator_reply
    from eq_env.baselines.exchange_audit.scripted import INJECTION
    from eq_env.core.policy import make_policy
    from eq_env.core.runner import forced_action
    from eq_env.exchange_audit.rules import Decision
    from eq_env.exchange_audit.runner import policy_seed
    from eq_env.exchange_audit.spaces import decode_validator_observation

    conditions = validator_conditions()
    envs = [exchange_audit_v0.env(config=c.config) for c in conditions]
    proposers = [make_policy(c.spec, "proposer") for c in conditions]
    current: int | None = None
    for s, i in _states(split, "validator", episodes, seed, stats):
        if s != current:  # a run of seed s: each proposer reset as the runner resets it, then one act an episode
            current = s
            for policy in proposers:
                policy.reset(seed=policy_seed(s, "proposer"))
        asked: dict[str, dict[str, Any]] = {}
        for c, env, policy in zip(conditions, envs, proposers, strict=True):
            env.reset(seed=s, options={"episode": i})
            env.step(policy.act(env.observe(PROPOSER_AGENT)))
            observation = env.observe(VALIDATOR_AGENT)
            if forced_action(observation) is not None:  # a NO_TRADE: the runner does not ask the validator
                stats.not_asked += 1
                continue
            view = decode_validator_observation(observation)
            messages = render_validator_prompt(view, version)
            prompt = messages[-1]["content"]
            if prompt in asked:
                asked[prompt]["meta"]["proposers"].append(c.proposer)
                stats.merged += 1
                continue
            state = env.unwrapped.game.state
            decision, why = rule_reason(view)
            reply = json.dumps({"decision": decision.name, "reason": why})
            if parse_validator_reply(reply) != (decision, why):
                raise AssertionError(f"the validator's parser does not read {decision.name} back from {reply!r}")
            right = Decision.APPROVE if state.compliant else Decision.BLOCK
            reason = ""
            if decision is not right:
                reason = (
                    "the rule approves a trade that is not compliant"
                    if decision is Decision.APPROVE
                    else "the rule blocks a compliant trade"
                )
            messages.append({"role": "assistant", "content": reply})
            meta = {
                "split": split,
                "seed": s,
                "episode": i,
                "role": "validator",
                "prompt_version": version,
                "game": GAME,
                "verified": not reason,
                "reason": reason,
                "proposers": [c.proposer],
                "preset": "paper_scripted",
                "q": c.config.q,
                "V": c.config.V,
                "L": c.config.L,
                "B": c.config.checks_per_audit,
                "decision": decision.name,
                "audit": view.audit.outcome.name,
                "injected": INJECTION in view.submission.artifact.text,
                "ambiguous": state.ambiguous,
                "compliant": state.compliant,
            }
            asked[prompt] = {"messages": messages, "meta": meta}
        for line in asked.values():
            stats.lines["validator"] += 1
            stats.unverified["validator"] += not line["meta"]["verified"]
            yield line


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------
def _checked(
    roles: Sequence[str] | None,
    episodes: int,
    seed: int,
    split: str,
    prompt_version: str,
    search_episodes: int,
) -> tuple[str, ...]:
    """The roles asked for, once each in :data:`ROLES` order; a ValueError naming a bad argument."""
    from eq_env.agents.exchange_audit.policies import prompt_variants

    wanted = check_request(roles, ROLES, episodes, MAX_EPISODES, seed, split)
    if isinstance(search_episodes, bool) or not isinstance(search_episodes, int) or not 100 <= search_episodes:
        raise ValueError(f"search_episodes must be an integer of at least 100, got {search_episodes!r}")
    for role in wanted:
        versions = prompt_variants(role)
        if prompt_version not in versions:
            raise ValueError(
                f"prompt_version {prompt_version!r} has no {role} template (the {role}'s: {', '.join(versions)})"
            )
    return wanted


def demonstrations(
    roles: Sequence[str] | None = None,
    episodes: int = DEFAULT_EPISODES,
    seed: int = TRAIN_SEED,
    *,
    split: str = "train",
    prompt_version: str = "v1",
    search_episodes: int = SEARCH_EPISODES,
    stats: DemoStats | None = None,
) -> Iterator[dict[str, Any]]:
    """The demonstration lines (dicts; see the module docstring), role by role (``roles``: ``proposer``,
    ``validator``, default both), then state by state (seed, then episode), then condition by condition.

    ``split``: ``"train"`` — ``episodes`` episodes of ``seed``, bench states skipped; ``"test"`` — the bench's
    seeds, the first ``episodes`` (at most 200) of each (``seed`` is not used). ``prompt_version``: the
    templates' version (every role asked for must have it: the proposer's variants ``terse_v1``… have no
    validator template). ``search_episodes``: the best-response search's size. ``stats`` (a
    :class:`DemoStats`) is filled as it goes. A ValueError names a bad argument before anything is played.
    """
    wanted = _checked(roles, episodes, seed, split, prompt_version, search_episodes)
    stats = stats if stats is not None else DemoStats()
    return _lines(wanted, episodes, seed, split, prompt_version, search_episodes, stats)


def _lines(
    roles: tuple[str, ...],
    episodes: int,
    seed: int,
    split: str,
    version: str,
    search_episodes: int,
    stats: DemoStats,
) -> Iterator[dict[str, Any]]:
    if "proposer" in roles:
        yield from _proposer_lines(split, episodes, seed, version, search_episodes, stats)
    if "validator" in roles:
        yield from _validator_lines(split, episodes, seed, version, stats)
