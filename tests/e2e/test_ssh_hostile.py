"""Hostile strings in every host-profile field, against a real sshd: errors with sentences, nothing executed.

Host names (and jump hosts) go to the resolver.  Every attack string holds shell
metacharacters, which glibc's getaddrinfo refuses before sending any query
(EAI_NONAME even in an empty network namespace, where a query would fail with
EAI_AGAIN), so no DNS query leaves this machine.
"""
from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.errors import BadSpecError, NeuronBenchError
from app.paths import AppPaths
from app.services.ssh_prompts import NoPrompts
from app.services.ssh_transport import SshTransport
from tests.e2e.conftest import remote_profile


def attacks(marker: str, spaces: bool) -> st.SearchStrategy[str]:
    """Attempts to run ``touch MARKER`` through a shell; without spaces for fields that refuse them."""
    touch = f"touch {marker}" if spaces else f"touch${{IFS}}{marker}"
    return st.sampled_from([f"$({touch})", f";{touch}", f"`{touch}`", f"|{touch}", f"&&{touch}", f"'$({touch})'",
                            f'"$({touch})"', f"x\\;{touch}", f"$(IFS=,;{touch.replace('${IFS}', ',')})"])


@pytest.mark.parametrize("field", ["name", "hostname", "user", "python", "identity_file", "instance_type",
                                   "region", "proxy_jump"])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_profile_fields_never_execute_on_either_side(sshd, data_dir, tmp_path, field, data):
    marker = tmp_path / "pwned"
    value = data.draw(attacks(str(marker), spaces=field in ("python", "identity_file", "instance_type", "region")))
    overrides = {field: value}
    if field == "python":
        overrides["python"] = f"{sys.executable} {value}"  # an interpreter path with a command glued on
    try:
        profile = remote_profile(sshd, **overrides)
    except BadSpecError:
        assert not marker.exists()
        return  # refused as data before anything connected (e.g. a jump host that is not [user@]host[:port])
    ssh = SshTransport(profile, AppPaths.resolve(data_dir), NoPrompts(accept_new_host_keys=True),
                       connect_timeout=5)
    try:
        ssh.setup()
        outcome = "ready"
    except NeuronBenchError as exc:
        outcome = str(exc)
    finally:
        ssh.close()
    assert not marker.exists()
    if field in ("name", "instance_type", "region"):
        assert outcome == "ready"  # labels and metadata: they never reach the host
    elif field in ("hostname", "proxy_jump"):
        assert "does not resolve" in outcome or "not a valid host name" in outcome
    elif field in ("user", "identity_file"):  # no such user there; no such key file here
        assert "refused to log in" in outcome
    else:
        assert "does not exist there" in outcome


@pytest.mark.parametrize("python", ["/usr/bin/env", "/bin/sh"])
def test_a_python_that_is_not_python_is_a_deploy_error(sshd, data_dir, python):
    ssh = SshTransport(remote_profile(sshd, python=python), AppPaths.resolve(data_dir), NoPrompts(True))
    with pytest.raises(NeuronBenchError, match="did not start"):
        ssh.setup()
    ssh.close()
