"""The executors' answers from a model, as a policy: :class:`LLMExecutor` (registered as executor ``llm``).

In belief coordination the executors' policies choose only (T, p); the answers come from the environment's
*answerer*. To play a model through the generic runners (``run_all``: recorded, resumed, replayed), this
executor policy asks :class:`~eq_env.agents.belief_coordination.answerer.LLMAnswerer` for exactly the request the
environment is about to make (same prompt, sample key and cache as ``reproduce --answerer llm``), and hands
the answer to the environment's answerer (:class:`_Prepared`) for the step. ``eq-env bench``'s
belief-coordination task plays it (:mod:`eq_env.studies.belief_coordination.bench`). It reads the environment
(``aact_privileged``) only to build that request: what it decides — (T, p) — comes from its parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from eq_env.belief_coordination.answerers import Answer, AnswerRequest, round_requests
from eq_env.belief_coordination.questions import BASELINE_SAMPLING as BASE
from eq_env.core.policy import REQUIRED, PolicyError, PolicySetupError

__all__ = ["LLMExecutor"]


# ---------------------------------------------------------------------------
# The model as the executors' answerer
# ---------------------------------------------------------------------------
class _Prepared:
    """The environment's answerer during a bench run: it returns the answers :class:`LLMExecutor` obtained
    for exactly the requests the environment makes (keyed by their sample key)."""

    name = "llm"

    def __init__(self) -> None:
        self.answers: dict[tuple[int, int, int, int], tuple[AnswerRequest, Answer]] = {}

    def put(self, request: AnswerRequest, answer: Answer) -> None:
        episode = request.sample_key[:2]
        # (a failed episode leaves its other executors' answers behind: drop them when the next one starts)
        self.answers = {k: v for k, v in self.answers.items() if k[:2] == episode}
        self.answers[request.sample_key] = (request, answer)

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        out = []
        for request in requests:
            request_seen, answer = self.answers.pop(request.sample_key, (None, None))
            if request_seen != request or answer is None:
                raise RuntimeError(
                    f"no prepared answer for executor {request.executor}'s request in round "
                    f"{request.round} (the bench executor asked another one): a bug"
                )
            out.append(answer)
        return out


class LLMExecutor:
    """An executor at a fixed (T, p) whose answers come from a model (see the module docstring).

    Executor i of N samples at ``temperature``, or, with ``t_high``, at the i-th of N temperatures evenly spaced
    over [temperature, t_high] (the majority-vote schedule), at penalty ``penalty``; the model is asked
    through :class:`~eq_env.agents.belief_coordination.answerer.LLMAnswerer` (``penalty_mode``: how p is sent).
    """

    role: ClassVar[str] = "executor"
    RUNTIME_PARAMETERS: ClassVar[tuple[str, ...]] = ("concurrency",)

    def __init__(
        self,
        model: str = REQUIRED,
        base_url: str | None = None,
        temperature: float = BASE[0],
        penalty: float = BASE[1],
        t_high: float | None = None,
        max_tokens: int = 512,
        penalty_mode: str = "frequency",
        prompt_version: str = "v1",
        concurrency: int = 8,
    ) -> None:
        from eq_env.agents.belief_coordination.answerer import LLMAnswerer

        for name, value in (("temperature", temperature), ("penalty", penalty), ("t_high", t_high)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"{name} must be a number, got {value!r}")
        self.temperature, self.penalty = float(temperature), float(penalty)
        self.t_high = None if t_high is None else float(t_high)
        self.answerer = LLMAnswerer(
            str(model),
            base_url,
            penalty=penalty_mode,
            max_tokens=max_tokens,
            prompt_version=prompt_version,
            concurrency=concurrency,
        )

    @classmethod
    def canonical_parameters(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Keyed by the endpoint the policy will really talk to (credentials masked), as the LLM policies are."""
        from eq_env.agents.client import register_endpoint, resolve_base_url

        return {**params, "base_url": register_endpoint(resolve_base_url(params.get("base_url")))}

    def __repr__(self) -> str:
        schedule = "" if self.t_high is None else f"..{self.t_high:g}"
        return f"LLMExecutor({self.answerer.model!r}, T={self.temperature:g}{schedule}, p={self.penalty:g})"

    def reset(self, seed: int | None = None) -> None:
        """Nothing to seed: each request's sample is fixed by its sample key."""

    async def check(self) -> None:
        await self.answerer.check()

    async def aclose(self) -> None:
        await self.answerer.aclose()

    def act(self, observation: Mapping[str, Any]) -> Any:
        raise TypeError("LLMExecutor acts with the environment (aact_privileged): play it with eq_env's runners")

    def sampling(self, index: int, n: int) -> tuple[float, float]:
        """(T, p) of executor ``index`` of ``n``."""
        if self.t_high is None:
            return self.temperature, self.penalty
        temps = np.linspace(self.temperature, self.t_high, n) if n > 1 else [(self.temperature + self.t_high) / 2]
        return float(temps[index]), self.penalty

    async def aact_privileged(self, observation: Mapping[str, Any], env: Any) -> tuple[Any, dict[str, Any]]:
        from eq_env.agents.client import NotRecordedError
        from eq_env.baselines.belief_coordination.scripted import as_action

        game, agent = env.unwrapped, env.agent_selection
        index, n = int(agent.rpartition("_")[2]), game.config.n_executors
        action = as_action(observation, *self.sampling(index, n))
        t, p = game.executor_parameters(agent, action)  # exactly the (T, p) the environment will send
        previous = game.replies[-1] if game.replies else None
        request = round_requests(
            game.question, [(t, p)] * n, previous, game.draws, game.stream_seed, game.episode, game.round
        )[index]
        try:
            (answer,) = await self.answerer.aanswer([request])
        except NotRecordedError as err:  # a replay of another run: nothing of this one can be played
            raise PolicySetupError(str(err)) from None
        info = {k: v for k, v in answer.info.items() if k not in ("sampling", "seed", "error", "failed")}
        info["decisions"] = 1
        if answer.failed:  # the endpoint's failure, not the model's answer: the episode fails (played on resume)
            raise PolicyError(f"{agent}: {answer.info.get('error')}", info)
        if not isinstance(game.answerer, _Prepared):
            game.answerer = _Prepared()
        game.answerer.put(request, answer)
        return action, info
