"""The AEC environment's fast path changes no result.

The speed-ups — masked and unmasked sampling without Gymnasium's checks, observations with shared
read-only arrays, a proposer-action decoder for the usual form, the pure rules' value objects built without
redundant conversions, PettingZoo's order-enforcing iterator in one call — must leave every observation,
reward, termination, info and sampled action as it was. The digests below pin a fixed-seed trace of
random legal actions in four configurations.

How the digests were produced: ``_aec_trace`` and ``_parallel_trace`` exactly as written here, run on the
code of commit 956cbed (before any of these changes), printed with
``print(_aec_trace(config, 7 + i, 3000), _parallel_trace(config, 7 + i, 300))`` for the i-th entry of
``CONFIGS``. A trace records, for every agent step, the agent, ``last()`` (observation, reward,
termination, truncation, info), the sampled action, the ``rewards`` and ``terminations`` dicts and a second
``observe()``; every value canonically: dict keys in order, arrays with dtype, shape, ``repr`` of each
element and the writeable flag, numpy scalars with their type, floats by ``repr``. If a digest changes, a
result changed: find out which before touching the digest.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import types
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from eq_env import exchange_audit_v0
from eq_env.exchange_audit.rules import Claims, DrawStream, count_words, make_artifact, truncate_words
from eq_env.exchange_audit.spaces import (
    CLAIM_VALUE_BOUNDS,
    ActionError,
    BoundedBox,
    ExchangeAuditSpaces,
    FastDiscrete,
    FastMultiDiscrete,
    FreeText,
    _clip,
)

CONFIGS: list[dict[str, Any]] = [
    {},
    {"reward_mode": "individual", "q": 1.0, "B": 2},
    {"preset": "paper_scripted", "cost_model": "tokens", "q": 0.7},
    {"preset": "paper_main_script", "max_words": 5, "B": 0, "reward_mode": "individual"},
]
DIGESTS = [  # (AEC trace, parallel trace), recorded at commit 956cbed (see the module docstring)
    (
        "950c00c7aff8e06b094aa9a511ae855ec5912d2cbc9fd061321540ec178bbaca",
        "cf23263d84750cc663e2bf57552306dda36d39966ddf3dbfa9e3f66fb21fd59f",
    ),
    (
        "34273447cbf0269cff2c11b73da27a4216f3e30a6aa8796722ae7a851e7c46f6",
        "f53cfdfa019cf3f4119b694131535efe51bdaebf755e6b324388f0d969e62842",
    ),
    (
        "d193732f380b7994599580bfdde44757296e3c1b54f1683898f0a0b728ed2554",
        "ee48537672cdffb8a72cf3eb0c4015c4b522c5d5736626d4ce0d1f9a61708910",
    ),
    (
        "abf61741176e55d9766b9a14e2bc19549d4733e9815c2b9f61daca5c2c94daa8",
        "d78bd3b32f0bafb55de1ca1a1d33f6383e24e99e1646057f6e871a9bb8ceb0a4",
    ),
]


def _canon(x: Any) -> Any:
    if isinstance(x, dict):
        return {"__dict__": [[str(k), _canon(v)] for k, v in x.items()], "__type__": type(x).__name__}
    if isinstance(x, np.ndarray):
        return {
            "nd": str(x.dtype),
            "shape": list(x.shape),
            "v": [repr(v) for v in x.ravel().tolist()],
            "w": bool(x.flags.writeable),
        }
    if isinstance(x, np.generic):
        return {"np": type(x).__name__, "v": repr(x.item())}
    if isinstance(x, (list, tuple)):
        return {"seq": type(x).__name__, "v": [_canon(v) for v in x]}
    if isinstance(x, float):
        return {"f": repr(x)}
    if isinstance(x, (bool, int, str)) or x is None:
        return {type(x).__name__: x}
    raise TypeError(type(x))


def _aec_trace(kwargs: dict[str, Any], seed: int, agent_steps: int) -> str:
    env = exchange_audit_v0.env(**kwargs)
    env.reset(seed=seed)
    for a in env.possible_agents:
        env.action_space(a).seed(seed)
    h = hashlib.sha256()
    n = 0
    while n < agent_steps:
        for agent in env.agent_iter():
            obs, rew, term, trunc, info = env.last()
            action = None if term or trunc else env.action_space(agent).sample(obs.get("action_mask"))
            rec = [
                agent,
                _canon(obs),
                _canon(rew),
                term,
                trunc,
                _canon(info),
                _canon(action),
                _canon(dict(env.rewards)),
                _canon(dict(env.terminations)),
                _canon(env.observe(agent)),
            ]
            h.update(json.dumps(rec, sort_keys=True).encode())
            env.step(action)
            n += 1
        env.reset()
    return h.hexdigest()


def _parallel_trace(kwargs: dict[str, Any], seed: int, episodes: int) -> str:
    env = exchange_audit_v0.parallel_env(**kwargs)
    h = hashlib.sha256()
    for a in env.possible_agents:
        env.action_space(a).seed(seed)
    obs, infos = env.reset(seed=seed)
    h.update(json.dumps([_canon(obs), _canon(infos)], sort_keys=True).encode())
    for _ in range(episodes):
        while env.agents:
            acts = {a: env.action_space(a).sample(obs[a].get("action_mask")) for a in env.agents}
            out = env.step(acts)
            obs = out[0]
            h.update(json.dumps([_canon(acts)] + [_canon(o) for o in out], sort_keys=True).encode())
        obs, infos = env.reset()
        h.update(json.dumps([_canon(obs), _canon(infos)], sort_keys=True).encode())
    return h.hexdigest()


# Short traces for the fast suite (400 agent steps, 40 parallel episodes), recorded the same way at 956cbed.
SHORT_DIGESTS = {
    1: (
        "d52aa72c89156ba02f0318f79d838a04d75d40f88dc1623077d994ad2ad8636f",
        "71285b921251f921ea058f62bfcb44adad04ae55741f38ab7336ace4aafb39b6",
    ),
    3: (
        "c720bbd8ef379f9f8de40118a547ef8bd126e34c5791137047e6eb5f07e2bead",
        "81dbb041d38eadb2b20bed597f187ce892e5a2bf4af1d898f11d71adc4836fd4",
    ),
}


@pytest.mark.parametrize("i", sorted(SHORT_DIGESTS))
def test_a_short_trace_is_the_one_recorded_before_the_fast_path(i: int) -> None:
    assert _aec_trace(CONFIGS[i], 7 + i, 400) == SHORT_DIGESTS[i][0]
    assert _parallel_trace(CONFIGS[i], 7 + i, 40) == SHORT_DIGESTS[i][1]


@pytest.mark.slow
@pytest.mark.parametrize("i", range(len(CONFIGS)))
def test_every_configurations_trace_is_the_one_recorded_before_the_fast_path(i: int) -> None:
    assert _aec_trace(CONFIGS[i], 7 + i, 3000) == DIGESTS[i][0]
    assert _parallel_trace(CONFIGS[i], 7 + i, 300) == DIGESTS[i][1]


# -- sampling: the same draws as Gymnasium's own spaces ------------------------------------------------
def _same_generator(a: spaces.Space[Any], b: spaces.Space[Any]) -> bool:
    return bool(a.np_random.bit_generator.state == b.np_random.bit_generator.state)


@pytest.mark.parametrize("n", [1, 2, 3, 61])
def test_fast_discrete_draws_what_discrete_draws_with_and_without_a_mask(n: int) -> None:
    ours, theirs = FastDiscrete(n, seed=5), spaces.Discrete(n, seed=5)
    masks = np.random.default_rng(0).integers(0, 2, size=(300, n)).astype(np.int8)
    for mask in [None, *masks, np.zeros(n, dtype=np.int8), np.ones(n, dtype=np.int8)]:
        a, b = ours.sample(mask), theirs.sample(mask)
        assert a == b and type(a) is type(b)
    assert _same_generator(ours, theirs)
    shifted, reference = FastDiscrete(n, start=-2, seed=1), spaces.Discrete(n, start=-2, seed=1)
    for _ in range(50):
        a, b = shifted.sample(), reference.sample()
        assert a == b and type(a) is type(b)


def test_fast_discrete_leaves_odd_masks_and_probabilities_to_gymnasium() -> None:
    space = FastDiscrete(2, seed=0)
    with pytest.raises(AssertionError):
        space.sample(np.array([1, 2], dtype=np.int8))  # not 0/1
    with pytest.raises(AssertionError):
        space.sample(np.array([1, 1], dtype=np.int64))  # not int8
    with pytest.raises(AssertionError):
        space.sample(np.array([1, 1, 1], dtype=np.int8))  # wrong shape
    ours, theirs = FastDiscrete(2, seed=3), spaces.Discrete(2, seed=3)
    p = np.array([0.25, 0.75])
    assert [ours.sample(probability=p) for _ in range(20)] == [theirs.sample(probability=p) for _ in range(20)]


def test_fast_multidiscrete_and_bounded_box_draw_what_gymnasium_draws() -> None:
    ours, theirs = FastMultiDiscrete([3, 3, 3, 2, 2], seed=2), spaces.MultiDiscrete([3, 3, 3, 2, 2], seed=2)
    for _ in range(100):
        a, b = ours.sample(), theirs.sample()
        assert a.dtype == b.dtype and a.tolist() == b.tolist()
    low, high = CLAIM_VALUE_BOUNDS
    box, ref = BoundedBox(low, high, dtype=np.float64, seed=4), spaces.Box(low, high, dtype=np.float64, seed=4)
    for _ in range(100):
        a, b = box.sample(), ref.sample()
        assert a.dtype == b.dtype and a.tolist() == b.tolist()
    assert _same_generator(ours, theirs) and _same_generator(box, ref)


def _free_text_before(space: FreeText) -> str:
    """FreeText.sample as it was before the fast path (one sized draw of the word indices)."""
    from eq_env.exchange_audit.spaces import _SAMPLE_WORDS

    rng = space.np_random
    n_words = int(rng.integers(0, FreeText.MAX_SAMPLE_WORDS + 1))
    if n_words == 0:
        return ""
    picks = rng.integers(0, len(_SAMPLE_WORDS), size=n_words).tolist()
    return " ".join(_SAMPLE_WORDS[i] for i in picks)[: space.max_length]


@pytest.mark.parametrize("max_length", [7, 100_000])
def test_free_text_samples_the_texts_it_sampled_before(max_length: int) -> None:
    ours, before = FreeText(max_length, seed=9), FreeText(max_length, seed=9)
    for _ in range(300):
        text = ours.sample()
        assert text == _free_text_before(before) and text in ours
    assert _same_generator(ours, before)


# -- the action decoder's fast path accepts and returns what the full path does ------------------------
def _decode_both(codec: ExchangeAuditSpaces, action: dict[str, Any]) -> tuple[Any, Any]:
    """(the decoder on a dict — its fast path when the form fits —, the full path on the same mapping)."""
    out = []
    for arg in (action, types.MappingProxyType(action)):  # (a mapping that is not a dict: the full path)
        try:
            out.append(codec.decode_proposer_action(arg))
        except ActionError as err:
            out.append(("error", str(err)))
    return out[0], out[1]


def test_the_fast_decoder_agrees_with_the_full_one_on_samples_and_on_edge_cases() -> None:
    codec = ExchangeAuditSpaces(exchange_audit_v0.raw_env(max_words=5).config)
    space = codec.proposer_action
    space.seed(0)
    variants: list[Any] = [
        ("action", np.int64(2)),
        ("action", True),
        ("action", np.int32(1)),
        ("action", 1),
        ("reported_intent", -1),
        ("word_count", np.int64(6)),
        ("word_count", np.int64(5)),
        ("token_count", 4097),
        ("reported_numbers", np.array([np.nan, 0.0, 0.0])),
        ("reported_numbers", np.array([4.0, -3.0, 3.0])),
        ("reported_numbers", np.array([4.0000001, 0.0, 0.0])),
        ("reported_numbers", np.array([1.0, 0.0, 0.0], dtype=np.float32)),
        ("reported_numbers", [1.0, 0.0, 0.0]),
        ("claim_values", np.array([-0.0, -1.0])),
        ("claim_values", np.array([0.5, 2.5])),
        ("claims", np.array([2, 2, 2, 1, 1])),
        ("claims", np.array([3, 0, 0, 0, 0])),
        ("claims", np.array([0, 0, 0, 0, 2])),
        ("claims", np.array([1, 1, 1, 1, 1], dtype=np.int32)),
        ("text", "tab\tand newline\n words  many more than five here"),
        ("text", "bell \x07"),
        ("text", "x" * 100_001),
        ("text", b"bytes"),
        ("text", "  "),
    ]
    for i in range(400):
        action = space.sample()
        if i < len(variants):
            key, value = variants[i]
            action[key] = value
        fast, full = _decode_both(codec, action)
        assert fast == full, (i, action)
    extra = dict(space.sample(), surplus=1)
    assert _decode_both(codec, extra)[0] == _decode_both(codec, extra)[1]


@pytest.mark.parametrize("x", [-0.0, 0.0, -1.0, 2.0, 4.0, 5.0, -5.0, np.inf, -np.inf, np.nan, 0.5])
def test_clip_is_numpys_to_the_bit(x: float) -> None:
    for low, high in zip(*(b.tolist() for b in CLAIM_VALUE_BOUNDS), strict=True):
        expected = np.clip(np.array([x]), np.array([low]), np.array([high]))[0].item()
        assert repr(_clip(x, low, high)) == repr(expected)


@pytest.mark.parametrize(
    "text", ["", "   ", "one", " a  b\tc\nd ", "a\u00a0b\u2003c d e f g", "x " * 10, "\u3000lead trail\u3000"]
)
@pytest.mark.parametrize("max_words", [0, 1, 3, 60])
def test_make_artifact_counts_and_truncates_as_before(text: str, max_words: int) -> None:
    artifact = make_artifact(Claims(), text, max_words, 4)
    truncated = truncate_words(text, max_words)
    assert artifact.text == truncated
    assert artifact.words == (count_words(truncated) if truncated else min(4, max_words))


# -- observations -------------------------------------------------------------------------------------
def test_observations_equal_the_public_encoders_and_are_read_only() -> None:
    env = exchange_audit_v0.raw_env(q=0.6, B=2)
    codec = env.codec
    env.reset(seed=3)
    for a in env.possible_agents:
        env.action_space(a).seed(3)
    for _ in range(200):
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            game = env.game
            if agent == "proposer_0":
                assert game.proposer_view is not None
                expected = codec.encode_proposer_observation(game.proposer_view, game.phase)
            else:
                assert game.state is not None and game.proposer_view is not None
                expected = codec.encode_validator_observation(
                    game.proposer_view.public, game.state.ambiguous, game.validator_view, game.phase
                )
                if game.phase == 2:
                    expected["action_mask"] = np.array([1, 0], dtype=np.int8)
            assert list(obs) == list(expected)
            for key, value in obs.items():
                other = expected[key]
                assert type(value) is type(other), (agent, key)
                if isinstance(value, np.ndarray):
                    assert not value.flags.writeable, key
                    value, other = (
                        (value.dtype, value.shape, value.tolist()),
                        (other.dtype, other.shape, other.tolist()),
                    )
                assert repr(value) == repr(other), (agent, key)
            env.step(None if term or trunc else env.action_space(agent).sample(obs.get("action_mask")))
        env.reset()


def test_an_unpickled_environment_still_hands_out_read_only_observations() -> None:
    env = exchange_audit_v0.raw_env()
    env.reset(seed=1)
    env.observe("proposer_0")
    copy = pickle.loads(pickle.dumps(env))
    for agent in copy.possible_agents:
        for value in copy.observe(agent).values():
            if isinstance(value, np.ndarray):
                assert not value.flags.writeable


# -- the order-enforcing iterator ---------------------------------------------------------------------
def test_agent_iter_still_insists_on_a_step_between_agents() -> None:
    env = exchange_audit_v0.env()
    env.reset(seed=0)
    it = iter(env.agent_iter())
    assert next(it) == "proposer_0"
    with pytest.raises(AssertionError, match="need to call step"):
        next(it)
    env.reset(seed=0)
    assert [agent for agent in env.agent_iter(max_iter=1)] == ["proposer_0"]


# -- the draw stream draws ahead, and hands out the same numbers -----------------------------------------
@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_the_draw_stream_hands_out_the_same_numbers_whatever_the_mix_of_next_batch_and_skip() -> None:
    ops = np.random.default_rng(1)
    for seed in range(12):
        stream, handed = DrawStream(seed), []
        for _ in range(60):
            op = int(ops.integers(0, 4))
            if op <= 1:
                d = stream.next()
                assert all(type(part) is tuple and type(part[0]) is float for part in (d.state_u, d.noise_z, d.audit_u))
                handed.append((list(d.state_u), list(d.noise_z), list(d.audit_u)))
            elif op == 2:
                s, z, a = stream.batch(int(ops.integers(0, 40)))
                assert s.dtype == z.dtype == a.dtype == np.float64
                handed.extend(zip(s.tolist(), z.tolist(), a.tolist(), strict=True))
            else:
                n = int(ops.integers(0, 300))
                stream.skip(n)
                handed.extend([None] * n)  # type: ignore[list-item]
            assert stream.episodes_drawn == len(handed)
        s, z, a = DrawStream(seed).batch(len(handed))  # one draw of all of them, straight from the generators
        for row, expected in zip(handed, zip(s.tolist(), z.tolist(), a.tolist(), strict=True), strict=True):
            assert row is None or row == expected
