"""Matrix arithmetic written as the answer: `A + B`, `A - B`, `A B`, `A \\cdot B` of explicit matrices,
evaluated exactly to the one matrix it names (issue 30: "The sum is $M_1 + M_2$" against the summed
matrix, and a product with the identity). Products bind before sums; shapes that do not fit, more than
`MAX_TERMS` matrices or cells that cannot be read leave the answer as written (it then equals no
matrix). The rule in `details` is "matrix arithmetic evaluated: ...".
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from assay.verifiers.math import symbolic

MAX_TERMS = 4
MAX_CELLS = 36
_ENV_RE = re.compile(r"\\begin\{([pbvBV]?matrix)\}(.*?)\\end\{\1\}", re.DOTALL)
_OPERATOR_RE = re.compile(r"^\s*(\+|-|\\cdot|\\times|\*|)\s*$")


def _matrix(body: str) -> Any:
    import sympy

    rows = [row for row in (r.strip() for r in re.split(r"\\\\", body)) if row]
    cells = [[cell.strip() for cell in row.split("&")] for row in rows]
    if not cells or len({len(row) for row in cells}) != 1 or sum(map(len, cells)) > MAX_CELLS:
        raise ValueError("not a rectangular matrix of readable size")
    return sympy.Matrix([[symbolic.to_sympy(cell) for cell in row] for row in cells])


def evaluate(text: str) -> str | None:
    """The evaluated matrix as LaTeX (`\\begin{pmatrix}...\\end{pmatrix}`), or None if `text` is not
    matrix arithmetic of explicit matrices."""
    matches = list(_ENV_RE.finditer(text))
    if (
        not 2 <= len(matches) <= MAX_TERMS
        or text[: matches[0].start()].strip()
        or text[matches[-1].end() :].strip()
    ):
        return None
    operators = [text[a.end() : b.start()] for a, b in itertools.pairwise(matches)]
    found = [_OPERATOR_RE.match(op) for op in operators]
    if not all(found):
        return None
    try:
        terms = [_matrix(m.group(2)) for m in matches]
        signs = [m.group(1) if m else "" for m in found]
        sums = [terms[0]]
        for sign, term in zip(signs, terms[1:], strict=True):
            if sign in ("+", "-"):
                sums.append(term if sign == "+" else -term)
            else:
                sums[-1] = sums[-1] * term
        total = sums[0]
        for term in sums[1:]:
            total = total + term
    except Exception:  # sympy raises ShapeError and others on odd input; TooCostly and ValueError too
        return None
    import sympy

    rows = " \\\\ ".join(" & ".join(sympy.latex(cell) for cell in total.row(i)) for i in range(total.rows))
    return f"\\begin{{pmatrix}} {rows} \\end{{pmatrix}}"
