"""Ray version comparisons, read the way KubeRay reads `rayVersion`.

Some features need a minimum Ray release (token auth ≥ 2.52, Kubernetes token auth ≥ 2.55,
worker-group priority ≥ 2.56, the HTTP health probes ≥ 2.53). KubeRay parses `rayVersion` with
Kubernetes' "generic" version parser: an optional "v", two or more dot-separated numbers (the
first without a leading zero), then anything but a line break, which is ignored. So
"2.52.0rc1" counts as 2.52.0 and "nightly" is an error. Missing trailing components count as
zero ("2.52" equals "2.52.0").

Kubernetes does that with one regular expression; Python's backtracking engine takes time
quadratic in the length of a long run of digits that fails to match it (a newline at the end),
so the same rule is written here as one pass over the text. `rayVersion` is also limited to
`MAX_LENGTH` characters (in the CRD as well), and a component to Go's 64-bit unsigned range.
"""

from __future__ import annotations

import re
from itertools import zip_longest

from crds.messages import quoted

MAX_LENGTH = 64
"""Characters of `rayVersion`; Ray's own versions ("2.52.0rc1", "3.0.0.dev0") are short."""

# Go's regexp `\s` (no vertical tab, unlike Python's) and the numeric part of its pattern.
_GO_SPACE = "\t\n\f\r "
_NUMBERS = re.compile(r"[0-9]+(?:\.[0-9]+)*")
# strconv.ParseUint(component, 10, 0) on a 64-bit platform.
_MAX_COMPONENT = 2**64 - 1

Version = tuple[int, ...]


def parse_generic(text: str) -> Version | str:
    """The numeric components of `text`, or a message saying why it is not a version."""
    if len(text) > MAX_LENGTH:
        return f"{quoted(text)} is longer than {MAX_LENGTH} characters"
    rest = text.lstrip(_GO_SPACE)
    rest = rest.removeprefix("v")
    match = _NUMBERS.match(rest)
    # What follows the numbers is ignored, but Go's `.` does not match a line break.
    if match is None or "\n" in rest[match.end() :]:
        return f"{quoted(text)} is not a version number such as 2.52.0"
    parts = match.group().split(".")
    if len(parts) < 2:
        return f"{quoted(text)} needs at least a major and a minor number, such as 2.52"
    if parts[0] != "0" and parts[0].startswith("0"):
        return f"{quoted(text)} has a leading zero in its major number"
    numbers = tuple(int(part) for part in parts)  # at most MAX_LENGTH digits each
    if max(numbers) > _MAX_COMPONENT:
        return f"{quoted(text)} has a number larger than {_MAX_COMPONENT}"
    return numbers


def length_problem(ray_version: str | None) -> str | None:
    """Why `rayVersion` is too long to be read at all, or None."""
    if ray_version is None or len(ray_version) <= MAX_LENGTH:
        return None
    return f"rayVersion must be at most {MAX_LENGTH} characters (got {len(ray_version)})"


def less_than(version: Version, minimum: Version) -> bool:
    """Compare component by component, missing ones counting as 0."""
    for mine, theirs in zip_longest(version, minimum, fillvalue=0):
        if mine != theirs:
            return mine < theirs
    return False


def render(version: Version) -> str:
    """Render (2, 52, 0) as "2.52.0"."""
    return ".".join(str(part) for part in version)


def minimum_problem(ray_version: str | None, minimum: Version, feature: str) -> str | None:
    """Why `ray_version` does not allow `feature` (which needs `minimum`), or None."""
    wanted = render(minimum)
    if not ray_version:
        return f"{feature} needs Ray {wanted} or later, so rayVersion must be set"
    parsed = parse_generic(ray_version)
    if isinstance(parsed, str):
        return f"{feature} needs Ray {wanted} or later, but rayVersion {parsed}"
    if less_than(parsed, minimum):
        return f"{feature} needs Ray {wanted} or later, got rayVersion {ray_version}"
    return None
