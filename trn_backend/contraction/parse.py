"""Einsum subscripts: parsing, validation and ellipsis expansion.

One job: subscripts text plus operand shapes become one label per dimension (``Spec``), or an error that names
the offending letter, operand and sizes. Semantics follow ``numpy.einsum``: implicit output is the ellipsis
dimensions then the labels seen once in alphabetical order, size-1 dimensions broadcast, ellipsis dimensions
align from the right.
"""

from __future__ import annotations

import dataclasses
import functools
import string

# The characters subscripts are written in, beyond their syntax (",", "->", "..." and ASCII spaces): any letter,
# as NumPy takes, and every character from U+00C0 on, which is where opt_einsum's generated symbols continue
# after the 52 ASCII letters (``opt_einsum.get_symbol``: chr(i + 140), then chr(i + 2048) past the surrogates),
# letters or not ('×', '÷', spaces such as U+2003, private-use and surrogate code points all occur).
FIRST_GENERATED = 0xC0


def is_label(c: str) -> bool:
    """Whether the character ``c`` may name an index in subscripts."""
    return c.isalpha() or ord(c) >= FIRST_GENERATED


_SPACES = " \t\n\r\f\v"  # layout; U+2003 and other Unicode spaces are symbols opt_einsum generates
_NO_SPACES = str.maketrans("", "", _SPACES)
_SYNTAX = ",.->" + _SPACES
# Ellipsis dimensions get labels no subscripts can contain: the characters below U+00C0 that are neither letters
# nor syntax: digits first, then control characters, then punctuation (over a hundred, more than any tensor has).
ELLIPSIS_LABELS = string.digits + "".join(
    sorted(
        (c for c in map(chr, range(1, FIRST_GENERATED)) if not is_label(c) and c not in _SYNTAX and not c.isdigit()),
        key=lambda c: (c.isprintable(), c),
    )
)
_ELLIPSIS_SET = frozenset(ELLIPSIS_LABELS)

__all__ = ["Spec", "parse", "symbol", "is_label", "ELLIPSIS_LABELS"]

Shapes = tuple[tuple[int, ...], ...]


@dataclasses.dataclass(frozen=True)
class Spec:
    """A validated einsum: one label per dimension of each operand (ellipsis expanded) and of the output."""

    inputs: tuple[str, ...]
    output: str

    @property
    def subscripts(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


def symbol(i: int) -> str:
    """The i-th generated label: ASCII letters first, then CJK ideographs (alphabetic, so valid labels)."""
    return string.ascii_letters[i] if i < 52 else chr(0x4E00 + i - 52)


@functools.lru_cache(maxsize=4096)
def parse(subscripts: str, shapes: Shapes, func: str = "einsum") -> Spec:
    """Validate ``subscripts`` against the operand ``shapes`` and expand the ellipsis."""
    if not isinstance(subscripts, str):
        raise TypeError(f"{func}() expects subscripts as a str such as 'ij,jk->ik', got {type(subscripts).__name__}")
    text = subscripts.translate(_NO_SPACES)
    lhs, arrow, rhs = text.partition("->")
    for part, where in ((lhs, "inputs"), (rhs, "output")):
        bad = next((c for c in part if c in "->"), None)
        if bad is not None:
            raise ValueError(
                f"{func}(): stray {bad!r} in the {where} of subscripts {subscripts!r}; "
                "use a single '->' between inputs and output"
            )
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"{func}(): subscripts {subscripts!r} describe {len(terms)} operand(s), got {len(shapes)} operand(s)"
        )
    parsed = [_term(t, f"operand {i}", func) for i, t in enumerate(terms)]
    n_ellipsis = [
        _ellipsis_dims(labels, has, shape, i, func)
        for i, ((labels, has), shape) in enumerate(zip(parsed, shapes, strict=True))
    ]
    width = max(n_ellipsis, default=0)
    inputs = tuple(_expand(labels, has, width - n, n) for (labels, has), n in zip(parsed, n_ellipsis, strict=True))
    _check_sizes(inputs, shapes, func)
    output = _output(rhs, arrow, inputs, width, func)
    return Spec(inputs, output)


def _term(term: str, where: str, func: str) -> tuple[str, bool]:
    """The letters of one term and whether it has an ellipsis."""
    has = "..." in term
    letters = term.replace("...", "", 1)
    if "." in letters:
        raise ValueError(f"{func}(): {where} {term!r} has a '.' that is not part of one '...'")
    for c in letters:
        if not is_label(c):
            raise ValueError(
                f"{func}(): invalid subscript {c!r} in {where} {term!r}; subscripts are letters (or "
                f"characters from U+00C0 on, as opt_einsum generates)"
            )
    return letters if not has else term.replace("...", "\0", 1), has


def _ellipsis_dims(labels: str, has: bool, shape: tuple[int, ...], i: int, func: str) -> int:
    named = len(labels) - has
    if (has and len(shape) < named) or (not has and len(shape) != named):
        raise ValueError(
            f"{func}(): operand {i} has {len(shape)} dimension(s) (shape {tuple(shape)}) but its "
            f"subscripts {labels.replace(chr(0), '...')!r} name {named}"
            + ("" if has else "; add '...' to broadcast the others")
        )
    return len(shape) - named


def _expand(labels: str, has: bool, start: int, n: int) -> str:
    """Replace the ellipsis marker by the labels of its dimensions (right-aligned across operands)."""
    return labels.replace("\0", ELLIPSIS_LABELS[start : start + n]) if has else labels


def _describe(label: str) -> str:
    return "an ellipsis ('...') dimension" if label in _ELLIPSIS_SET else f"index {label!r}"


def _check_sizes(inputs: tuple[str, ...], shapes: Shapes, func: str) -> None:
    """Equal sizes for a repeated label within an operand; across operands, equal or 1 (broadcast)."""
    seen: dict[str, tuple[int, int]] = {}
    for i, (labels, shape) in enumerate(zip(inputs, shapes, strict=True)):
        own: dict[str, int] = {}
        for label, size in zip(labels, shape, strict=True):
            if own.setdefault(label, size) != size:
                raise ValueError(
                    f"{func}(): {_describe(label)} is repeated in operand {i} with sizes "
                    f"{own[label]} and {size}; a repeated index takes a diagonal of equal sizes"
                )
            j, other = seen.setdefault(label, (i, size))
            if other != size and 1 not in (other, size):
                raise ValueError(
                    f"{func}(): {_describe(label)} has size {other} in operand {j} (shape "
                    f"{tuple(shapes[j])}) and size {size} in operand {i} (shape {tuple(shape)})"
                )
            if other == 1:
                seen[label] = (i, size)


def _output(rhs: str, arrow: str, inputs: tuple[str, ...], width: int, func: str) -> str:
    ellipsis = ELLIPSIS_LABELS[:width]
    if not arrow:
        counts = "".join(inputs)
        return ellipsis + "".join(sorted(c for c in set(counts) if c not in _ELLIPSIS_SET and counts.count(c) == 1))
    letters, has = _term(rhs, "the output", func)
    if width and not has:
        raise ValueError(
            f"{func}(): the operands have {width} ellipsis dimension(s) but the output "
            f"{rhs!r} has no '...' to keep them"
        )
    output = _expand(letters, has, 0, width)
    known = set("".join(inputs))
    for c in letters:
        if c != "\0" and c not in known:
            raise ValueError(f"{func}(): output index {c!r} appears in no input")
        if c != "\0" and letters.count(c) > 1:
            raise ValueError(f"{func}(): output index {c!r} is repeated in {rhs!r}")
    return output
