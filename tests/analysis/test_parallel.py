"""The one parallel runner: outcomes in task order, a failing task recorded, the rest complete."""

import pytest

from cyclesim.analysis.parallel import map_tasks


def _square_but_three(x: int) -> int:
    if x == 3:
        raise ValueError("three is refused")
    return x * x


@pytest.mark.parametrize("workers", [1, 2])
def test_outcomes_in_order_and_a_failure_is_a_row(workers):
    out = map_tasks(_square_but_three, range(6), workers=workers, progress=False)
    assert [o.index for o in out] == list(range(6))
    assert [o.value for o in out if o.ok] == [0, 1, 4, 16, 25]
    (failed,) = [o for o in out if not o.ok]
    assert failed.index == 3 and failed.error.startswith("ValueError: three is refused")
