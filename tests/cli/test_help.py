"""Every subcommand's --help prints (argparse %-formats help strings: a spec's "95% interval" once broke it)."""
from __future__ import annotations

import pytest

from app.cli import main

COMMANDS = [["run"], ["compare"], ["report"], ["hosts", "add"], ["probe"], ["monitor"], ["prices", "list"],
            ["runs", "list"]]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_help_prints_and_exits_cleanly(argv, capsys):
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    assert "usage: neuronbench" in capsys.readouterr().out


def test_run_help_says_a_target_waits_for_the_requests_p99_needs(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--target-ci PCT stop once the 95% interval is within ±PCT %" in text
    assert "after --min-iters requests and at least 100 (p99 needs them), --duration the cap" in text
