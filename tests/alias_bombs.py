"""YAML "billion laughs" documents: a few hundred bytes that name billions of strings.

Each level's anchor holds `width` aliases of the level before, so the last key alone names
`width ** (levels + 1)` strings. `BOMB_398` and `BOMB_584` have the sizes of the two documents
reported against the worker: 398 bytes (one became a 71 MB container argument) and 584 bytes
(3.5×10¹⁰ strings here).
"""

from __future__ import annotations


def alias_bomb(levels: int, *, width: int = 9, size: int | None = None, indent: str = "") -> str:
    """The YAML mapping `a0: &a0 [lol,...]`, `a1: &a1 [*a0,...]`, ... up to `a{levels}`.

    `size` pads the document with a comment to exactly that many bytes; `indent` is added to
    every line afterwards, to embed it in a manifest as a block scalar.
    """
    lines = [f"a0: &a0 [{','.join(['lol'] * width)}]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{','.join([f'*a{level - 1}'] * width)}]")
    if size is not None:
        padding = size - sum(len(line) + 1 for line in lines) - 2  # "#" and its newline
        assert padding >= 0, f"{levels} levels take more than {size} bytes"
        lines.append(f"#{'~' * padding}")
    return "".join(f"{indent}{line}\n" for line in lines)


def expanded_strings(levels: int, width: int = 9) -> int:
    """How many strings `alias_bomb(levels, width=width)` names once its aliases expand."""
    return sum(width ** (level + 1) for level in range(levels + 1))


BOMB_398 = alias_bomb(7, size=398)
BOMB_584 = alias_bomb(10, size=584)
SMALL_BOMB = alias_bomb(5)
"""Expands to about 4 MB of JSON: past the bounds, yet small enough for code without them
to expand in a moment, so a test of a refusal fails (rather than hangs) without them."""
