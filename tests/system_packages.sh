#!/bin/sh
# Debian packages the tests use: a real OpenSSH server and client (SSH tests: sshd, ssh-keygen, ssh-agent,
# and ssh for bench/ssh_latency.py) and pdftoppm (PDF report checks).
# Installed when missing and we are root (CI); otherwise say what to install.
missing=""
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || missing="$missing openssh-server"
command -v ssh-keygen >/dev/null 2>&1 && command -v ssh-agent >/dev/null 2>&1 || missing="$missing openssh-client"
command -v pdftoppm >/dev/null 2>&1 || missing="$missing poppler-utils"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
    echo "the tests need these Debian packages:$missing (sudo apt-get install$missing)" >&2
    exit 1
fi
