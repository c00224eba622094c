"""A key file that exists but is not a key (a device, a folder, a FIFO) says what it is, not "no such file"."""
from __future__ import annotations

import os

import pytest

from app.cli import main
from app.paths import AppPaths
from app.services.hosts_store import HostsStore
from app.services.ssh_connect import KeyRing
from app.services.ssh_prompts import NoPrompts


@pytest.fixture
def not_keys(tmp_path):
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo)  # reading it would block until someone writes: it must never be opened
    return {"/dev/zero": "is a device, not a private key file", str(tmp_path): "is a folder, not a private key file",
            str(fifo): "is a FIFO, not a private key file"}


def test_hosts_add_refuses_a_key_file_that_is_no_file_and_stores_nothing(not_keys, tmp_path, capsys):
    data = tmp_path / "data"
    for path, sentence in not_keys.items():
        code = main(["hosts", "add", "trn", "--hostname", "10.0.0.5", "--identity", path, "--data-dir", str(data)])
        err = capsys.readouterr().err
        assert code == 2 and f"--identity '{path}' {sentence}" in err
    assert HostsStore(AppPaths.resolve(str(data)).config).names() == ["local"]
    main(["hosts", "add", "later", "--hostname", "h", "--identity", str(tmp_path / "missing"), "--data-dir", str(data)])
    assert "does not exist (yet)" in capsys.readouterr().err  # a key to be made later is still taken


def test_connecting_with_such_a_key_file_says_what_it_is(not_keys):
    ring = KeyRing()
    for path, sentence in not_keys.items():
        assert ring.load(path, NoPrompts()) == (None, sentence)
