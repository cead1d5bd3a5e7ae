"""The kill schedule is repeatable, bounded and spread over every component."""

from __future__ import annotations

from collections import Counter

from tests.chaos.schedule import COMPONENTS, plan_kills


def test_the_same_seed_gives_the_same_schedule() -> None:
    assert plan_kills(7, 12, 60.0) == plan_kills(7, 12, 60.0)
    assert plan_kills(7, 12, 60.0) != plan_kills(8, 12, 60.0)


def test_kills_are_bounded_in_count_and_time_and_ordered() -> None:
    kills = plan_kills(3, 50, 600.0, max_down=2.0)
    assert len(kills) == 50
    assert all(0 <= k.at < 600.0 and 0.2 <= k.down_for <= 2.0 for k in kills)
    assert [k.at for k in kills] == sorted(k.at for k in kills)


def test_every_component_is_killed_about_equally_often() -> None:
    counts = Counter(k.component for k in plan_kills(1, 10, 60.0))
    assert set(counts) == set(COMPONENTS)
    assert max(counts.values()) - min(counts.values()) <= 1
