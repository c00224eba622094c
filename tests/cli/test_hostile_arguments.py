"""Hostile command-line input: one sentence, never a traceback, never a repainted terminal, nothing bad stored.

Every field a user types is tried with strings a hostile script or a mistyped shell line would pass:
escape sequences, a bell, a carriage return, a direction override, 100 kB, bytes that are not UTF-8
(which Python receives as lone surrogates), empty and blank values.  The CLI runs in this process
(``app.cli.main``, the real commands) with a run store that holds one finished run, so a reference
that matched every run would act on it.
"""
from __future__ import annotations

import json

import pytest

from app.cli import main
from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services.hosts_store import HostsStore
from app.services.store import RunStore

RUN_ID = "20261124-101500-c0ffee"
HOSTILE = ["\x1b[2J\x1b[H", "\x07bell", "a\rb", "a\nb", "\u202eevil", "\x9b31m", "x" * 100_000, "\udcff\udcfe",
           "", " ", "\t", "$(touch /tmp/pwned)", "%_%", "../../etc/passwd", "<b>x</b>", "2026", "a'b\"c"]
BLANK = {"", " ", "\t"}


def fields(out: str) -> dict[str, list[str]]:
    """Each field as the argv that puts ``{V}`` in it."""
    return {
        "host name": ["hosts", "add", "{V}", "--hostname", "h"],
        "hostname": ["hosts", "add", "n1", "--hostname", "{V}"],
        "user": ["hosts", "add", "n2", "--hostname", "h", "--user", "{V}"],
        "python": ["hosts", "add", "n3", "--hostname", "h", "--python", "{V}"],
        "identity": ["hosts", "add", "n4", "--hostname", "h", "--identity", "{V}"],
        "instance type": ["hosts", "add", "n5", "--hostname", "h", "--instance-type", "{V}"],
        "proxy jump": ["hosts", "add", "n6", "--hostname", "h", "--proxy-jump", "{V}"],
        "runs show": ["runs", "show", "{V}"],
        "runs attach": ["runs", "attach", "{V}"],
        "runs cancel": ["runs", "cancel", "{V}"],
        "runs set run": ["runs", "set", "{V}", "--instance-type", "inf2.xlarge"],
        "runs set type": ["runs", "set", RUN_ID, "--instance-type", "{V}"],
        "prices set type": ["prices", "set", "{V}", "1.0"],
        "prices set price": ["prices", "set", "inf2.xlarge", "{V}"],
        "run host": ["run", "--host", "{V}", "--workload", "train"],
        "model arg": ["run", "--host", "nosuch", "--workload", "train", "--model-arg", "k={V}"],
        "model": ["run", "--host", "nosuch", "--workload", "train", "--model", "{V}"],
        "compare": ["compare", "{V}"],
        "report": ["report", "{V}", "--format", "html", "--output", out],
        "hosts remove": ["hosts", "remove", "{V}"],
        "probe": ["probe", "--host", "{V}"],
    }


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    path = tmp_path / "nb-data"
    monkeypatch.setenv("NEURONBENCH_DATA_DIR", str(path))
    with RunStore(AppPaths.resolve(str(path)).runs_db) as store:
        store.begin_run(RUN_ID, "local", {"workload": "train", "model": "vit_tiny_patch16_224"})
        store.finish_run(RUN_ID, {"status": "ok", "workload": "train", "spec": {"workload": "train"}})
    return path


def printable(text: str) -> bool:
    return all(c == "\n" or (c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF) for c in text)


@pytest.mark.parametrize("field", sorted(fields("")))
def test_every_field_answers_hostile_text_with_one_safe_sentence(field, data_dir, tmp_path, capsys):
    template = fields(str(tmp_path / "report.html"))[field]
    for index, value in enumerate(HOSTILE):
        argv = [a.replace("{V}", value) if "{V}" in a else a for a in template]
        argv = [f"{a}{index}" if a.startswith("n") and a[1:].isdigit() else a for a in argv]  # a new host name
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own refusals
            code = exc.code
        out, err = capsys.readouterr()
        what = f"{field} = {value[:20]!r}"
        assert "Traceback" not in err, what
        assert printable(out) and printable(err), f"{what}: raw control characters reach the terminal:\n{err}"
        assert max(map(len, (out + err).splitlines()), default=0) < 2_200, f"{what}: echoed back whole"
        if value in BLANK and field in ("runs show", "runs attach", "runs cancel", "runs set run"):
            assert code == 2 and "give a run id" in err, f"{what}: a blank run id must act on nothing: {err}"
        if "\udcff" in value:
            assert code == 2 and "not valid text" in err and "UTF-8" in err, what
    with RunStore(AppPaths.resolve(str(data_dir)).runs_db) as store:
        assert store.get_run(RUN_ID).status == "ok"  # no reference acted on the stored run
    hosts = AppPaths.resolve(str(data_dir)).config / "hosts.json"
    if hosts.exists():  # whatever was stored is a valid profile, in valid UTF-8
        hosts.read_text(encoding="utf-8")
        for profile in HostsStore(AppPaths.resolve(str(data_dir)).config).list():
            HostProfile.from_dict(json.loads(json.dumps(profile.to_dict())))


@pytest.mark.parametrize("argv, words", [
    (["--model-arg", "k=" + "[" * 3000], "--model-arg 'k' nests deeper than the 28 levels"),  # json gives up
    (["--model-arg", "k=" + "[" * 500 + "]" * 500], "--model-arg k nests deeper than the 28 levels"),
    (["--model-arg", "k=" + "x" * 70_000], "--model-arg k is 70000 characters long, over the 65536 allowed"),
    (["--steps", str(10 ** 20)], "--steps is an integer outside the 64-bit range"),
    (["--batch-size", str(2 ** 64)], "batch size is an integer outside the 64-bit range"),
])
def test_values_a_run_could_not_carry_are_one_sentence_before_anything_starts(argv, words, data_dir, capsys):
    code = main(["run", "--host", "local", "--workload", "train", *argv])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and words in err, err
    assert len(err.strip().splitlines()) == 1 and len(err) < 400, err
    with RunStore(AppPaths.resolve(str(data_dir)).runs_db) as store:
        assert [run.run_id for run in store.list_runs()] == [RUN_ID]  # nothing started, nothing stored
