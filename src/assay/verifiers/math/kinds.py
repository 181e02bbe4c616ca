"""The kinds an answer can be, as plain data: what `values` builds and `sets`, `matrices` and `compare` read.

Apart from `values` (the parser) so that the modules that compute with these kinds need not import the
parser, and the parser can use them without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from assay.verifiers.math.clock import Clock
from assay.verifiers.math.numbers import Number

SeqKind = Literal["paren", "bracket", "interval", "set", "vector", "list", "matrix"]


@dataclass(frozen=True)
class Atom:
    """One scalar: a number known exactly (`number`) or an expression left for sympy (`text`)."""

    text: str
    number: Number | None = None
    degrees: bool = False
    var: str | None = None  # "x" of "x = 3"


@dataclass(frozen=True)
class Seq:
    """Several values inside brackets (or a bare list). `left`/`right` keep interval ends."""

    kind: SeqKind
    items: tuple[Value, ...]
    left: str = ""
    right: str = ""
    var: str = ""  # "x" of "1 < x < 3": the interval of a named variable (1 < y < 3 is another answer)
    origin: str = field(default="", compare=False)  # the rule that built it ("set complement"), for details


@dataclass(frozen=True)
class Union:
    parts: tuple[Seq, ...]
    origin: str = field(default="", compare=False)


@dataclass(frozen=True)
class Relation:
    """An equation or inequality that is not "variable = value" (for example "x + y = 3")."""

    op: str
    lhs: str
    rhs: str
    chain: tuple[str, ...] = ()  # every part of a chain "a < b < c" (its middle counts), with `ops`
    ops: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choice:
    """A multiple-choice answer: the letter, and the option's value when written ("(B) 24")."""

    letter: str
    rest: str = ""


@dataclass(frozen=True)
class Text:
    text: str  # canonical_text form
    raw: str = field(default="", compare=False)


Value = Atom | Seq | Union | Relation | Choice | Text | Clock
