"""The `math` task: extract a final answer from a chain of thought and compare it with the gold.

Soundness comes before leniency: a false positive is worse than a false negative, because a policy
learns to produce whatever near-miss is rewarded. A pair is accepted only by a rule that is sound for the
gold's type, and `details["rule"]` names the rule that decided (so a disagreement with math-verify can be
read off the result). The rules, each enforced in code and pinned by tests/verifiers/math:

- Normalisation never changes meaning. Spacing and wrappers go (`\\dfrac`, `\\left(`, `\\text{}`,
  thousands separators, `\\$`); grouping stays: `x^{2y}` is not `x^2 y` and `2^{10}` is not `2^1 0`.
  Plain text is read as the mathematics it writes: "pi/2" is pi/2 and "It is 3." is 3, never products
  of letters; `1e100000` is scientific notation.
- Exact values compare exactly: integers, fractions and big values (`10^{18}+1` is not `10^{18}`;
  constants compare through their difference, evaluated as one expression). Only a decimal gold has a
  tolerance (`rel_tol`) or a rounding rule; a rounded decimal never equals an exact fraction.
- Symbols keep their names and subscripts: `a_1` is not `a_2`, `3x-2` is not `3y-2`, a bare letter
  answer is not a variable gold. Two expressions with different free symbols are different.
- Relations keep their parts: `x != 5` is not `x = 5`; every part of a chain counts (`1 < x < 5 < 7`),
  and an interval from an inequality keeps its variable (`1 < x < 3` is not `1 < y < 3`). Equivalent
  forms are accepted (`-x > -1` is `x < 1`).
- Clock times are times (`1:00` is not `12:00`); an undefined value (division by zero) equals nothing.
- Numeric evidence is a last resort and never overrules a symbolic "different": expressions with free
  symbols are sampled at positive, negative and (unless the gold uses `|x|`, floor and the like) complex
  points with exact inputs, to 30 digits, so `sqrt(x^2)` is not `x` and `log(x^2)` is not `2 log x`.
- A hedge (two different answers offered, boxed or after a cue) is wrong; a response cut off before its
  answer has none. The cost guard never turns a legal gold into an `error`: a gold too costly to evaluate
  is matched only by the same spelling.

- Answers are read the way policies write them (issue 30; docs/math.md): cues in 21 languages
  (cues.py), option letters in prose or through the prompt's options, never "A total of 48" as option A
  (choices.py), clock times (clock.py), set operations (sets.py), matrix arithmetic (matrices.py). A
  percent is its decimal, and "4%" answers 4 only where the prompt asks for a percent; a response that
  only restates its prompt is not rewarded (prompt.py, issue 28).

Measured, not assumed: benchmarks/math_fuzz.py (rule-blind generated pairs, FP per mutation and FN per
rendering) and benchmarks/mathverify_suite.py (math-verify's own test suite) print the rates.
"""

from assay.verifiers.math.scorer import MathOptions, MathScorer

TASK = "assay.verifiers.math:MathScorer"  # this folder is the `math` task (assay.registry)

__all__ = ["MathOptions", "MathScorer"]
