"""``ffcode demo``, the arithmetic self-check, runs and checks itself."""
import pytest

from ffcode.cli import commands as cli


def test_demo_passes(capsys):
    assert cli.main(["demo", "--n", "64", "--p", "65521"]) == 0
    out = capsys.readouterr().out
    assert "demo passed" in out and "FAILED" not in out
    assert "Freivalds projection ok" in out and "recovers x exactly: ok" in out


@pytest.mark.parametrize("argv", [["demo", "--p", "4"], ["demo", "--n", "-1"], ["nope"]])
def test_demo_rejects_bad_arguments(argv):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
