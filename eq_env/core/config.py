"""Validated, immutable game configurations: what every game's config class is made of.

A game's configuration is a frozen dataclass that inherits :class:`GameConfig`
and declares each parameter with :func:`number`, :func:`choice` or
:func:`flag`. Each declaration carries the parameter's documentation and
allowed values, so that validation, error messages, CLI flags (``--q 0.3``),
sweep grids and docs tables all come from one place::

    @dataclass(frozen=True)
    class MyConfig(GameConfig):
        NAME: ClassVar[str] = "my-game"
        n: int = number(4, 4, 12, "objects to sort", integer=True)
        mode: str = choice("none", ("none", "share"), "communication")

    MyConfig.PRESETS = {"default": MyConfig()}

An invalid value raises :class:`ValueError` naming the parameter and what it
must be; an unknown parameter :class:`UnknownParameterError` (a ``TypeError``
and a ``ValueError``). Numbers are normalised (numpy scalars to ``int``/``float``) so that
equal configurations hash and serialise alike.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np

__all__ = ["FieldRange", "GameConfig", "UnknownParameterError", "checked_number", "choice", "flag", "number", "shown"]

C = TypeVar("C", bound="GameConfig")


class UnknownParameterError(TypeError, ValueError):
    """A keyword that is no parameter of the game (``gymnasium.make(view, frameskip=1)``): a ``TypeError``, Python's
    convention for an unexpected keyword argument, which libraries that probe an environment's keywords rely on
    (TorchRL's ``GymEnv``), and a ``ValueError`` too, as every other bad configuration is (what a caller that
    catches those already catches). A bad value of a known parameter stays a plain ``ValueError``."""


@dataclass(frozen=True)
class FieldRange:
    """Closed range ``[low, high]`` a numeric field must lie in (``(low, high]`` with ``low_open``).

    ``none``: the word that stands for None where None is allowed (``B``: ``"all"``), else None is refused.
    """

    low: float
    high: float
    integer: bool = False
    low_open: bool = False
    none: str | None = None

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        high = "inf)" if math.isinf(self.high) else f"{self.high:g}]"
        return f"{kind} in {'(' if self.low_open else '['}{self.low:g}, {high}"

    def __contains__(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def check(self, name: str, value: Any) -> int | float | None:
        """``value`` as the field ``name`` stores it, or a ValueError naming ``name`` and this range."""
        if value is None and self.none is not None:
            return None
        return checked_number(name, value, self)


def number(
    default: Any,
    low: float,
    high: float,
    doc: str,
    *,
    integer: bool = False,
    low_open: bool = False,
    none: str | None = None,
) -> Any:
    """A numeric parameter in ``[low, high]`` (an integer with ``integer``; None allowed, spelled ``none``)."""
    return field(default=default, metadata={"range": FieldRange(low, high, integer, low_open, none), "doc": doc})


def choice(default: str, choices: Sequence[str], doc: str) -> Any:
    """A parameter that takes one of ``choices``."""
    return field(default=default, metadata={"choices": tuple(choices), "doc": doc})


def flag(default: bool, doc: str) -> Any:
    """A true-or-false parameter."""
    return field(default=default, metadata={"kind": bool, "doc": doc})


class GameConfig:
    """Base of a game's configuration dataclass (see the module docstring).

    Subclasses set ``NAME`` (the game's name in messages) and, after the class, ``PRESETS``
    (name → configuration); ``DEFAULT_PRESET`` names the one :meth:`from_preset` starts from.
    """

    NAME: ClassVar[str] = "game"
    PRESETS: ClassVar[Mapping[str, Any]] = {}
    DEFAULT_PRESET: ClassVar[str] = "default"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            meta = f.metadata
            value = getattr(self, f.name)
            if meta.get("kind") is bool:
                if not isinstance(value, (bool, np.bool_)):
                    raise ValueError(f"{f.name} must be True or False, got {value!r}")
                object.__setattr__(self, f.name, bool(value))
            elif "choices" in meta:
                if value not in meta["choices"]:
                    raise ValueError(f"{f.name} must be one of {meta['choices']}, got {value!r}")
            elif "range" in meta:
                object.__setattr__(self, f.name, meta["range"].check(f.name, value))
        self.validate()

    def validate(self) -> None:
        """Checks across fields (one field's checks are its declaration's); raise ValueError."""

    # -- construction ----------------------------------------------------------
    @classmethod
    def from_preset(cls: type[C], preset: str | None = None, /, **overrides: Any) -> C:
        """The named preset (default ``DEFAULT_PRESET``), with ``overrides`` applied (validated).

        ``preset`` is positional-only, so an override named ``preset`` is an unknown parameter, not a clash.
        """
        preset = cls.DEFAULT_PRESET if preset is None else preset
        if preset not in cls.PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(cls.PRESETS)}")
        return cls.PRESETS[preset].replace(**overrides)  # type: ignore[no-any-return]

    @classmethod
    def resolve(cls: type[C], config: Any, preset: str | None, overrides: Mapping[str, Any]) -> C:
        """The configuration an environment plays (validated): ``config``, or the preset (default
        ``DEFAULT_PRESET``), with ``overrides``. Both ``config`` and ``preset`` is refused: one would be silently
        ignored."""
        if config is None:
            return cls.from_preset(preset, **overrides)
        if not isinstance(config, cls):
            article = "an" if cls.__name__[:1] in "AEIOU" else "a"
            raise TypeError(f"config must be {article} {cls.__name__}, got {type(config).__name__}")
        if preset is not None:
            raise ValueError(
                f"give config or preset={preset!r}, not both: a config is complete already "
                f"(start from a preset with {cls.__name__}.from_preset(name, **overrides))"
            )
        return config.replace(**overrides)

    def replace(self: C, **overrides: Any) -> C:
        """A copy with some fields changed; unknown names raise :class:`UnknownParameterError` (a ``TypeError``,
        as Python's own unknown keywords are, and a ``ValueError``)."""
        unknown = set(overrides) - set(self.field_names())
        if unknown:
            raise UnknownParameterError(
                f"unknown {self.NAME} parameter(s) {sorted(unknown)}; valid names: {', '.join(self.field_names())}"
            )
        return dataclasses.replace(self, **overrides)  # type: ignore[type-var]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload, no-any-return]

    @classmethod
    def from_dict(cls: type[C], data: Mapping[str, Any]) -> C:
        return cls().replace(**data)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def parameters(cls) -> tuple[dataclasses.Field[Any], ...]:
        """The declared parameters, with their ``metadata`` (``doc`` and ``range``/``choices``/``kind``)."""
        return dataclasses.fields(cls)  # type: ignore[arg-type]


def checked_number(name: str, value: Any, rng: FieldRange) -> int | float:
    """``value`` as a plain int or float if it lies in ``rng``, else a ValueError naming ``name``.

    numpy scalars are accepted (sweeps often iterate over ``np.linspace``); booleans and strings are
    not. Types are normalised so that equal configs hash and serialise identically.
    """
    error = ValueError(f"{name} must be {rng.describe()}, got {shown(value)}")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise error
    try:
        if rng.integer:
            if isinstance(value, numbers.Integral):
                result: int | float = int(value)
            else:
                if not float(value).is_integer():
                    raise error
                result = int(float(value))
        else:
            result = float(value)
    except OverflowError:  # an integer no float can hold: out of every range we have
        raise error from None
    if (isinstance(result, float) and math.isnan(result)) or result not in rng:
        raise error
    return result


def shown(value: Any) -> str:
    """``repr(value)``, with a huge integer shortened so an error stays one readable line."""
    text = repr(value)
    if len(text) > 40 and isinstance(value, numbers.Integral):
        return f"{text[:12]}... (an integer of {len(text.lstrip('-'))} digits)"
    return text
