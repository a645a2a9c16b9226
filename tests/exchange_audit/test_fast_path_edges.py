"""The fast paths' edge cases the equality tests do not cover: copies, pickles and per-environment audit intensities."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
from test_fast_views import RefProposerEnv

from eq_env.core.policy import BasePolicy
from eq_env.exchange_audit.sb3_vector import ValidatorVecEnv
from eq_env.exchange_audit.views import ExchangeAuditProposerEnv


class ApproveRequests(BasePolicy):
    """A validator of one's own that opts in to the bulk path (``exact_batch = True``, as ``exact_partner``
    documents): it approves every request."""

    role = "validator"
    exact_batch = True

    def act(self, observation: Any) -> int:
        return int(observation["action_mask"][1])

    def act_batch(self, views: Any) -> np.ndarray:
        return np.ones(len(views.ambiguous), dtype=bool)


def test_fast_proposer_view_plays_an_opted_in_validator_not_the_rule() -> None:
    """``exact_partner`` lets a policy of one's own take the fast path, but ``_validator_kind`` maps every
    class other than AlwaysApprove / AlwaysBlock to ``"rule"``: the fast view plays the rule engine in the
    partner's place (about a third of the decisions differ here; the vectorised env gets them right)."""
    fast = ExchangeAuditProposerEnv(ApproveRequests(), q=0.0)
    ref = RefProposerEnv(ApproveRequests(), q=0.0)
    assert not fast.fast  # (the proposer view's fast path knows only this package's validators: the AEC path)
    rng = np.random.default_rng(0)
    fast.reset(seed=1)
    ref.reset(seed=1)
    for t in range(100):
        a = np.array([1] + [int(rng.integers(n)) for n in (2, 2, 3, 3, 3, 3)])
        f, r = fast.step(a), ref.step(a)
        assert f[4]["decision"] == r[4]["decision"] == "APPROVE", t
        assert f[1] == r[1], t
        fast.reset()
        ref.reset()


def _play(env: ValidatorVecEnv, steps: int) -> list[tuple[np.ndarray, list[int]]]:
    out = []
    for _ in range(steps):
        obs, _, _, infos = env.step(np.ones(env.num_envs, dtype=np.int64))
        out.append((obs.copy(), [info["episode_index"] for info in infos]))
    return out


def test_a_deepcopied_validator_vec_env_does_not_share_randomness_with_the_original() -> None:
    """With several audit intensities each environment draws its configuration through a lambda closed over
    its generator; ``deepcopy`` keeps the function (and so the original's generator): playing the copy moves
    the original's draws."""
    kwargs: dict[str, Any] = {"audit_intensities": [0.1, 0.5, 0.9]}
    original, twin = ValidatorVecEnv(2, "strategic", **kwargs), ValidatorVecEnv(2, "strategic", **kwargs)
    for env in (original, twin):
        env.seed(3)
        env.reset()
    _play(copy.deepcopy(original), 40)
    for (o1, e1), (o2, e2) in zip(_play(original, 40), _play(twin, 40), strict=True):
        assert e1 == e2 and np.array_equal(o1, o2)


def test_a_validator_vec_env_with_several_audit_intensities_pickles() -> None:
    """The single view and the proposer vec env pickle; this one fails on its local lambda."""
    env = ValidatorVecEnv(2, "strategic", audit_intensities=[0.1, 0.9])
    env.seed(0)
    env.reset()
    clone = pickle.loads(pickle.dumps(env))
    assert np.array_equal(_play(clone, 5)[-1][0], _play(env, 5)[-1][0])
