"""The compatibility tests: each RL library's documented PettingZoo entry, training a few thousand steps on every
game in its numeric observation mode (SuperSuit + SB3, TorchRL, Tianshou).

The libraries are the ``compat`` extra (``pip install '.[compat]'``), not the main test environment's: without
them each module skips with that reason, except where ``EQ_ENV_REQUIRE_COMPAT=1`` (``.ci/compat`` sets it), where
a missing library fails. What the modules share is :mod:`recipes`; the README's marked
(``<!-- needs:compat -->``) python blocks run here too (:mod:`test_readme`).
"""
