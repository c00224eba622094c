#!/bin/sh
# Debian packages the tests use: a real OpenSSH server and client (SSH tests: sshd, ssh-keygen, ssh-agent,
# and ssh for bench/ssh_latency.py), pdftoppm (PDF report checks), iproute2's ip (network namespaces) and the shared libraries Qt's widgets
# load even on the offscreen platform (GUI tests and screenshots), and a real Slurm (slurmctld, slurmd, the
# client commands, munge) that tests/cluster/slurm_cluster.py runs as root without systemd.
# Installed when missing and we are root (CI); otherwise say what to install.
missing=""
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || missing="$missing openssh-server"
command -v ssh-keygen >/dev/null 2>&1 && command -v ssh-agent >/dev/null 2>&1 || missing="$missing openssh-client"
command -v pdftoppm >/dev/null 2>&1 || missing="$missing poppler-utils"
# `ip` (network namespaces: the unreachable-rendezvous and second-machine tests, tests/e2e/netns.py)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing="$missing iproute2"
for pair in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${pair%%:*}" ] || missing="$missing ${pair#*:}"
done
for pair in libEGL.so.1:libegl1 libGL.so.1:libgl1 libfontconfig.so.1:libfontconfig1 \
            libxkbcommon.so.0:libxkbcommon0 libdbus-1.so.3:libdbus-1-3; do
    ldconfig -p 2>/dev/null | grep -q "${pair%%:*}" || missing="$missing ${pair#*:}"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing"
    # Debian's Slurm and munge packages try to start their services: no systemd here, and the tests start
    # their own daemons, so policy-rc.d refusing (or a failing invoke-rc.d) is expected and harmless.
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null 2>&1 \
        || { echo "apt-get install$missing failed (run it by hand to see why)" >&2; exit 1; }
else
    echo "the tests need these Debian packages:$missing (sudo apt-get install$missing)" >&2
    exit 1
fi
