"""Opening a verified, authenticated SSH connection with paramiko.

Everything a person can get wrong ends in one sentence (app.core.errors):
a name that does not resolve, a refused port, a host that never answers, a
server that is not SSH, a changed or unconfirmed host key, keys the server
refuses (saying which were tried).  ProxyJump hops are SSH connections too, each
with its host key checked, tunnelled with ``direct-tcpip`` channels: no shell,
no ProxyCommand.
"""
from __future__ import annotations

import getpass
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from app.core.errors import AuthError, ConnectError
from app.core.hosts import SSH_PORT, HostProfile, parse_jump_list
from app.core.quoting import quoted
from app.services.key_files import key_file_problem
from app.services.known_hosts import KnownHosts, known_hosts_name
from app.services.ssh_prompts import SshPrompts

CONNECT_TIMEOUT_S = 10.0
AUTH_TIMEOUT_S = 20.0
KEEPALIVE_S = 15
# A peer that stops acknowledging (laptop asleep, Wi-Fi gone) is declared dead after this long, so a
# run's stream ends and the session reconnects instead of waiting for TCP's ~15 minute default.
DEAD_PEER_S = 45
DEFAULT_KEYS = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")


@dataclass(frozen=True)
class Endpoint:
    """One SSH server to log in to (the target, or a jump hop)."""

    label: str
    hostname: str
    port: int
    user: str
    identity_file: str = ""
    # From ~/.ssh/config for a launched instance: reach it through this command (e.g. Session Manager)...
    proxy_command: str = ""
    # ...and file its host key under this name (the instance id) rather than an address that changes.
    host_key_alias: str = ""

    @property
    def where(self) -> str:
        return f"{self.label} ({self.known_name})"

    @property
    def known_name(self) -> str:
        return self.host_key_alias or known_hosts_name(self.hostname, self.port)

    @property
    def key_lookup(self) -> tuple[str, int]:
        """(name, port) under which known_hosts holds this server's key."""
        return (self.host_key_alias, SSH_PORT) if self.host_key_alias else (self.hostname, self.port)


def endpoints_for(profile: HostProfile, profiles: dict[str, HostProfile] | None = None) -> list[Endpoint]:
    """The jump hops, then the target.  A hop that names a saved profile uses that profile's settings."""
    profiles = profiles or {}
    chain = []
    for hop in parse_jump_list(profile.proxy_jump):
        saved = profiles.get(hop.host)
        if saved is not None and not saved.local:
            chain.append(Endpoint(saved.name, saved.hostname, saved.port, hop.user or saved.user or getpass.getuser(),
                                  saved.identity_file))
        else:
            chain.append(Endpoint(f"jump host {hop.host}", hop.host, hop.port, hop.user or getpass.getuser()))
    chain.append(Endpoint(profile.name, profile.hostname, profile.port, profile.user or getpass.getuser(),
                          profile.identity_file))
    return chain


class KeyRing:
    """Private keys loaded during this process (a passphrase is asked once, kept in memory only)."""

    def __init__(self) -> None:
        self._keys: dict[str, paramiko.PKey] = {}
        self._lock = threading.Lock()

    def load(self, path: str, prompts: SshPrompts) -> tuple[paramiko.PKey | None, str]:
        """The key at ``path``, or None and why not."""
        full = os.path.expanduser(path)
        with self._lock:
            if full in self._keys:
                return self._keys[full], ""
            problem = key_file_problem(full)
            if problem:
                return None, problem
            try:
                key = paramiko.PKey.from_path(full)
            except TypeError:  # cryptography: "password-protected, but password was not provided"
                key = None
            except (ValueError, OSError, paramiko.SSHException) as exc:
                return None, f"not a usable private key: {exc}"
            if key is None:
                passphrase = prompts.ask_passphrase(full)
                if passphrase is None:
                    return None, "encrypted, no passphrase given"
                try:
                    key = paramiko.PKey.from_path(full, passphrase.encode("utf-8"))
                except (TypeError, ValueError, paramiko.SSHException):
                    return None, "wrong passphrase"
            self._keys[full] = key
            return key, ""


@dataclass
class SshConnection:
    """An authenticated connection to the target, and the jump connections it runs through."""

    endpoint: Endpoint
    transport: paramiko.Transport
    jumps: list[paramiko.Transport] = field(default_factory=list)

    def is_active(self) -> bool:
        return self.transport.is_active()

    def close(self) -> None:
        for t in [self.transport, *reversed(self.jumps)]:
            try:
                t.close()
            except Exception:  # closing a dead transport may raise; it is closed either way
                pass


def _tune_socket(sock: socket.socket) -> None:
    """No Nagle delay, TCP keepalive and a user timeout (a silently vanished peer is noticed in ~DEAD_PEER_S).

    TCP_NODELAY as OpenSSH sets it: starting a command writes several small
    packets in a row (exec request, the spec on stdin, EOF), and Nagle's
    algorithm against the server's delayed ACK would hold each back ~40 ms.
    """
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", KEEPALIVE_S), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 6),
                        ("TCP_USER_TIMEOUT", DEAD_PEER_S * 1000)):
        option = getattr(socket, name, None)
        if option is not None:  # Linux has them all; macOS and Windows only some
            try:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)
            except OSError:
                pass


def _tcp_connect(ep: Endpoint, timeout: float) -> socket.socket:
    try:
        addresses = socket.getaddrinfo(ep.hostname, ep.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConnectError(f"cannot find {ep.label}: the name {ep.hostname!r} does not resolve "
                           f"({exc.strerror}); check the host's address and your DNS") from None
    except UnicodeError:
        raise ConnectError(f"cannot find {ep.label}: {ep.hostname!r} is not a valid host name") from None
    last: OSError | None = None
    for family, kind, proto, _name, address in addresses:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        _tune_socket(sock)
        return sock
    if isinstance(last, socket.timeout):
        raise ConnectError(f"{ep.where} did not answer within {timeout:g} s: check the address, that the instance "
                           f"is running and that its firewall or security group lets SSH in from here")
    if isinstance(last, ConnectionRefusedError):
        raise ConnectError(f"{ep.where} refused the connection: is sshd running there, and is port {ep.port} right?")
    raise ConnectError(f"cannot reach {ep.where}: {getattr(last, 'strerror', None) or last}")


def _proxy_command(ep: Endpoint) -> paramiko.ProxyCommand:
    """The ssh_config ``ProxyCommand`` of a launched instance, run as OpenSSH would (the user's own config)."""
    try:
        return paramiko.ProxyCommand(ep.proxy_command)
    except (paramiko.SSHException, OSError) as exc:
        raise ConnectError(f"cannot reach {ep.where}: its ProxyCommand in ~/.ssh/config did not start ({exc})") \
            from None


def _tunnel(via: paramiko.Transport, via_ep: Endpoint, ep: Endpoint, timeout: float) -> paramiko.Channel:
    try:
        return via.open_channel("direct-tcpip", (ep.hostname, ep.port), ("127.0.0.1", 0), timeout=timeout)
    except paramiko.ChannelException as exc:
        raise ConnectError(f"{via_ep.label} could not reach {ep.where} for us: {exc.text}") from None
    except paramiko.SSHException as exc:
        raise ConnectError(f"{via_ep.label} would not open a tunnel to {ep.where}: {exc} "
                           f"(is AllowTcpForwarding off there?)") from None


def _try_key(t: paramiko.Transport, ep: Endpoint, key: paramiko.PKey) -> bool:
    try:
        remaining = t.auth_publickey(ep.user, key)
    except paramiko.BadAuthenticationType as exc:
        raise AuthError(f"{ep.where} does not take key logins for {ep.user} (it allows: "
                        f"{', '.join(exc.allowed_types) or 'nothing'}); NeuronBench logs in with SSH keys") from None
    except paramiko.AuthenticationException:
        return False
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise ConnectError(f"{ep.where} closed the connection while we logged in: {exc}") from None
    if remaining:
        raise AuthError(f"{ep.where} wants a second factor ({', '.join(remaining)}) after the key; "
                        f"NeuronBench logs in with keys only")
    return True


def _authenticate(t: paramiko.Transport, ep: Endpoint, prompts: SshPrompts, keyring: KeyRing) -> None:
    tried: list[str] = []
    try:
        agent = paramiko.Agent()
    except paramiko.SSHException as exc:  # an agent that speaks another protocol: go on without it
        tried.append(f"the ssh-agent ({exc})")
        agent = None
    if agent is not None:
        try:
            agent_keys = agent.get_keys()
            for key in agent_keys:
                if _try_key(t, ep, key):
                    return
            if agent_keys:
                tried.append(f"{len(agent_keys)} key(s) from the ssh-agent")
        finally:
            agent.close()
    candidates = [ep.identity_file] if ep.identity_file else [p for p in DEFAULT_KEYS
                                                               if os.path.isfile(os.path.expanduser(p))]
    for path in candidates:
        key, why = keyring.load(path, prompts)
        if key is None:
            tried.append(f"{path} ({why})")
        elif _try_key(t, ep, key):
            return
        else:
            tried.append(f"{path} (refused)")
    if not tried:
        tried.append("nothing: no ssh-agent is running and none of ~/.ssh/id_ed25519, id_ecdsa, id_rsa exists")
    raise AuthError(f"{ep.where} refused to log in {quoted(ep.user)}; tried {'; '.join(tried)}; add your public key to "
                    f"~/.ssh/authorized_keys of {ep.user} on the host, or choose the key with --identity")


def _handshake(sock, ep: Endpoint, known_hosts: KnownHosts, prompts: SshPrompts, keyring: KeyRing,
               timeout: float) -> paramiko.Transport:
    t = paramiko.Transport(sock)
    t.banner_timeout = timeout
    t.auth_timeout = AUTH_TIMEOUT_S
    preferred = known_hosts.preferred_key_types(*ep.key_lookup)
    if preferred:  # ask for a key type we hold, or a host with two keys looks "unknown"
        options = t.get_security_options()
        options.key_types = [k for k in preferred if k in options.key_types] + \
                            [k for k in options.key_types if k not in preferred]
    try:
        t.start_client(timeout=timeout)
    except (paramiko.SSHException, EOFError, OSError) as exc:
        t.close()
        reason = str(exc) or type(exc).__name__
        if "banner" in reason.lower():
            reason = f"no SSH server answered within {timeout:g} s (is port {ep.port} really sshd?)"
        raise ConnectError(f"{ep.where} accepted the connection but the SSH handshake failed: {reason}") from None
    if not (t.is_active() and t.initial_kex_done):  # start_client returns quietly when its timeout passes
        t.close()
        reason = (f"no SSH server answered within {timeout:g} s (is port {ep.port} really sshd?)"
                  if not t.remote_version else f"it did not finish within {timeout:g} s")
        raise ConnectError(f"{ep.where} accepted the connection but the SSH handshake failed: {reason}")
    try:
        known_hosts.verify(ep.label, *ep.key_lookup, t.get_remote_server_key(), prompts)
        _authenticate(t, ep, prompts, keyring)
    except BaseException:
        t.close()
        raise
    t.set_keepalive(KEEPALIVE_S)
    return t


def connect(chain: list[Endpoint], known_hosts: KnownHosts, prompts: SshPrompts, keyring: KeyRing,
            timeout: float = CONNECT_TIMEOUT_S) -> SshConnection:
    """Log in to ``chain[-1]`` through the hops before it.  Raises ConnectError, HostKeyError or AuthError."""
    opened: list[paramiko.Transport] = []
    try:
        for index, ep in enumerate(chain):
            if opened:
                sock = _tunnel(opened[-1], chain[index - 1], ep, timeout)
            else:
                sock = _proxy_command(ep) if ep.proxy_command else _tcp_connect(ep, timeout)
            opened.append(_handshake(sock, ep, known_hosts, prompts, keyring, timeout))
    except BaseException:
        for t in reversed(opened):
            t.close()
        raise
    return SshConnection(chain[-1], opened[-1], opened[:-1])


def app_known_hosts(config_dir: Path) -> KnownHosts:
    """The user's ~/.ssh/known_hosts plus the app's own file in its config folder."""
    return KnownHosts(Path(config_dir) / "known_hosts")
