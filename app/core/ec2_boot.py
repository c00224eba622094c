"""What a launched instance is told at boot, and what it says back on its console.

* The user data: a shell script cloud-init runs once at first boot, which arms
  the dead-man switch, a shutdown ``max_minutes`` after boot.  The instance is
  launched with ``InstanceInitiatedShutdownBehavior=terminate``, so that shutdown
  is a termination: an instance outlives neither a crashed app nor a closed laptop.
* The console output: cloud-init prints the new host keys' fingerprints between
  ``-----BEGIN SSH HOST KEY FINGERPRINTS-----`` and ``-----END ...-----``.  AWS
  hands the console to the account owner only, so a key that matches it is the
  instance's own: a new instance is trusted without a blind first-use prompt.
"""
from __future__ import annotations

import re

BEGIN_FINGERPRINTS = "-----BEGIN SSH HOST KEY FINGERPRINTS-----"
END_FINGERPRINTS = "-----END SSH HOST KEY FINGERPRINTS-----"
# "256 SHA256:Ab3... root@ip-172-31-1-1 (ED25519)", possibly behind a console prefix ("ec2: ", a timestamp).
_FINGERPRINT_LINE = re.compile(r"\b\d+\s+(SHA256:[A-Za-z0-9+/]+=*)\s.*\(([A-Z0-9]+)\)\s*$")


def user_data_script(max_minutes: int, run_id: str = "") -> str:
    """The boot script: power off ``max_minutes`` after boot (a termination, given the shutdown behaviour).

    ``shutdown -h +N`` is scheduled by systemd and survives logouts; if it cannot be
    scheduled, a background sleep does the same job.
    """
    if not isinstance(max_minutes, int) or max_minutes < 1:
        raise ValueError(f"max_minutes must be a positive whole number, not {max_minutes!r}")
    label = f" for run {run_id}" if run_id else ""
    return (
        "#!/bin/sh\n"
        f"# NeuronBench dead-man switch{label}: this instance powers off {max_minutes} minutes after boot,\n"
        "# and was launched with InstanceInitiatedShutdownBehavior=terminate, so powering off terminates it.\n"
        f"shutdown -h +{max_minutes} 'NeuronBench: max-minutes ({max_minutes}) reached' "
        f"|| (sleep {max_minutes * 60} && poweroff) &\n"
    )


def scheduled_shutdown_minutes(user_data: str) -> int | None:
    """The minutes after boot at which a NeuronBench boot script powers off (None: not one of ours)."""
    match = re.search(r"^shutdown -h \+(\d+) ", user_data, re.MULTILINE)
    return int(match.group(1)) if match else None


def key_family(key_type: str) -> str:
    """An SSH key type as cloud-init names it: ``ssh-ed25519`` -> ``ED25519``, ``ecdsa-sha2-nistp256`` -> ``ECDSA``."""
    name = key_type.lower()
    if "ed25519" in name:
        return "ED25519"
    if name.startswith("ecdsa"):
        return "ECDSA"
    if "rsa" in name:
        return "RSA"
    if "dss" in name or name == "dsa":
        return "DSA"
    return key_type.upper()


def console_fingerprints(console: str) -> dict[str, set[str]]:
    """Host key fingerprints per key family from an instance's console output ({} when none are printed yet).

    Only the last block counts: a rebooted instance prints it again, and it is the keys now in use.
    """
    blocks: list[dict[str, set[str]]] = []
    current: dict[str, set[str]] | None = None
    for line in console.splitlines():
        if BEGIN_FINGERPRINTS in line:
            current = {}
        elif END_FINGERPRINTS in line:
            if current:
                blocks.append(current)
            current = None
        elif current is not None:
            match = _FINGERPRINT_LINE.search(line.rstrip())
            if match:
                current.setdefault(match.group(2), set()).add(match.group(1))
    return blocks[-1] if blocks else {}
