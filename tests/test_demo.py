"""The README's main job, ``ffcode demo``, runs, checks itself and leaves no processes."""
import multiprocessing

import pytest

from ffcode import cli


def test_demo_passes_and_cleans_up(capsys):
    """Bounded: the demo waits at most its own timeout for worker results."""
    assert cli.main(["demo", "--n", "64", "--p", "65521"]) == 0
    out = capsys.readouterr().out
    assert "demo passed" in out and "FAILED" not in out
    assert "classic:" in out and "full speed:" in out
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("argv", [["demo", "--p", "4"], ["demo", "--n", "-1"], ["nope"]])
def test_demo_rejects_bad_arguments(argv):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
