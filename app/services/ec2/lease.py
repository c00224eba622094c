"""``Ec2Transport``: a host that exists only while a run needs it.

One lifecycle, owned here: on the first agent command it launches the instance
(tagged, its dead-man switch armed in the launch request itself), waits for it
to run, reaches it over SSH through ~/.ssh/config, trusts its host key from its
console output, and deploys the agent; every agent command then goes to it like
any SSH host.  ``release()`` terminates it -- after the host's last run, and in a
``finally`` for every other way out (a failure, Ctrl-C, a bug) -- unless ``keep``.

While it is leased a watcher polls the instance: if AWS takes it away (a spot
interruption) or someone terminates it, the SSH stream is cut and the run ends
``interrupted``, with every event received until then kept.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import AuthError, CloudError, ConnectError, InstanceGoneError, NeuronBenchError
from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services.ec2.aws import AwsClients
from app.services.ec2.holds import InstanceHolds
from app.services.ec2.instances import (
    GONE_STATES,
    LaunchedInstance,
    console_output,
    describe,
    gone_reason,
    launch_instance,
    state_of,
    terminate,
    wait_running,
)
from app.services.ec2.reach import SSH_CONFIG, ConsoleCheckedPrompts, instance_endpoints
from app.services.ssh_prompts import NoPrompts, SshPrompts
from app.services.ssh_transport import SshTransport
from app.services.transport import AgentProcess, Transport
from remote_agent.protocol import new_run_id

# Launch progress, in order: what the live view and the CLI show while a host is being made.
STAGES = ("launching", "pending", "running", "ssh up", "deployed")


@dataclass(frozen=True)
class Ec2Timings:
    """How long to wait for each step, and how often to look (the tests shorten them)."""

    running_timeout_s: float = 10 * 60
    ssh_timeout_s: float = 10 * 60
    poll_s: float = 3.0
    watch_s: float = 15.0
    console_wait_s: float = 4 * 60
    console_poll_s: float = 5.0
    connect_timeout_s: float = 10.0


@dataclass
class Ec2RunOptions:
    """What one ``run`` asks of its launched hosts."""

    max_minutes: int
    keep: bool = False
    timings: Ec2Timings = field(default_factory=Ec2Timings)
    ssh_config: str = SSH_CONFIG
    on_stage: Callable[[str, str], None] | None = None  # (stage, sentence)


def _run_id_of(args: Sequence[str]) -> str:
    """The run id of a ``run --run-id ID`` command: the instance is tagged with its first run."""
    args = list(args)
    if args[:2] == ["run", "--run-id"] and len(args) > 2:
        return args[2]
    return new_run_id()


class Ec2Transport(Transport):
    """The agent on an instance launched for this run (see the module's docstring)."""

    def __init__(self, profile: HostProfile, paths: AppPaths, options: Ec2RunOptions,
                 prompts: SshPrompts | None = None, clients: AwsClients | None = None,
                 on_progress: Callable[[str], None] | None = None) -> None:
        if profile.ec2 is None:
            raise ValueError(f"host {profile.name} is not an EC2 launch profile")
        self.profile = profile
        self.launch = profile.ec2
        self.host = profile.name
        self.paths = paths
        self.options = options
        self.prompts = prompts or NoPrompts()
        self.clients = clients or AwsClients(self.launch.region)
        self.on_progress = on_progress
        self.holds = InstanceHolds(paths.data)
        self.instance: LaunchedInstance | None = None
        self.stage = ""
        self.gone: str | None = None  # why the instance went away mid-run
        self.release_error: CloudError | None = None
        self._ssh: SshTransport | None = None
        self._closing = False
        self._released = False
        self._acquire_lock = threading.Lock()  # one launch, even when two commands start at once
        self._launch_lock = threading.Lock()   # held across run_instances: release() waits for its answer
        self._release_lock = threading.Lock()
        self._watch_stop = threading.Event()
        self._watcher: threading.Thread | None = None

    # ------------------------------------------------------------------ Transport
    def start(self, args: Sequence[str], stdin: bytes | None = None) -> AgentProcess:
        self._check_usable()
        with self._acquire_lock:
            self._check_usable()
            if self._ssh is None:
                try:
                    self._acquire(_run_id_of(args))
                except BaseException:
                    self.release()  # a launch that failed half-way never leaves an instance behind
                    raise
            ssh = self._ssh
        assert ssh is not None
        self._check_usable()
        return ssh.start(args, stdin)

    @property
    def ephemeral(self) -> bool:  # type: ignore[override]
        return not self.options.keep

    def describe(self) -> str:
        if self.instance is None:
            return f"{self.launch.describe()} (not launched yet)"
        return f"{self.instance.instance_id} ({self.launch.instance_type} in {self.launch.region})"

    def close(self) -> None:
        self.release()

    def run_ended(self, result: dict[str, Any] | None, last: bool = True) -> dict[str, Any] | None:
        """A run on this host ended: its Result gets the instance's ``ec2`` block; after the last, terminate."""
        if last:
            self.release()
        if result is None or self.instance is None:
            return result
        result["ec2"] = self.instance.block()
        if self.release_error is not None and str(self.release_error) not in result.get("warnings", []):
            result.setdefault("warnings", []).append(str(self.release_error))
        if self.gone is not None and result.get("status") != "ok":
            result["status"] = "interrupted"
            error = result.get("error") or {}
            if error.get("kind") != InstanceGoneError.__name__:  # the agent's sentence, if any, stays in detail
                result["error"] = {"kind": InstanceGoneError.__name__, "message": self._gone_sentence(),
                                   "detail": error.get("message", "")}
        return result

    # ------------------------------------------------------------------ lifecycle
    def _say(self, stage: str, sentence: str) -> None:
        self.stage = stage
        if self.options.on_stage is not None:
            self.options.on_stage(stage, sentence)
        if self.on_progress is not None:
            self.on_progress(sentence)

    def _gone_sentence(self) -> str:
        instance = self.instance.instance_id if self.instance else "?"
        return (f"instance {instance} of {self.host} went away mid-run ({self.gone}): the run is interrupted; "
                f"every event received until then is kept")

    def _check_usable(self) -> None:
        if self.gone is not None:
            raise InstanceGoneError(self._gone_sentence())
        if self._closing:
            raise CloudError(f"the instance of {self.host} was already released (terminated or kept)")

    def _stopping(self) -> bool:
        return self._closing

    def _take_over_kept(self) -> LaunchedInstance | None:
        kept = self.holds.kept(self.host)
        if kept is None:
            return None
        self.holds.forget(self.host)
        try:
            state = state_of(describe(self.clients, kept["instance_id"]))
        except CloudError:
            return None
        if state != "running":
            return None
        fields = {k: v for k, v in kept.items() if k in LaunchedInstance.__dataclass_fields__}
        fields.update(launched_at=time.time(), terminated_at=None, kept=False, reused=True)
        return LaunchedInstance(**fields)

    def _acquire(self, run_id: str) -> None:
        reused = self._take_over_kept()
        if reused is not None:
            self.instance = reused
            self.holds.hold(reused.instance_id)
            self._say("running", f"taking over {reused.instance_id}, kept from an earlier run")
        else:
            self._say("launching", f"launching {self.launch.instance_type} in {self.launch.region}"
                                   f"{' (spot)' if self.launch.spot else ''}, terminated after the run or at the "
                                   f"latest {self.options.max_minutes} min after boot")
            with self._launch_lock:
                if self._closing:
                    raise CloudError(f"the launch on {self.host} was cancelled")
                self.instance = launch_instance(self.clients, self.launch, host=self.host, run_id=run_id,
                                                max_minutes=self.options.max_minutes)
                self.holds.hold(self.instance.instance_id)
            self._say("pending", f"{self.instance.instance_id} pending (image {self.instance.ami})")
        instance = self.instance
        timings = self.options.timings
        wait_running(self.clients, instance, timings.running_timeout_s, timings.poll_s, self._stopping,
                     on_state=lambda state: self._say(state, f"{instance.instance_id} {state}")
                     if state != "pending" else None)
        endpoints = instance_endpoints(self.profile, instance, self.options.ssh_config)
        prompts = ConsoleCheckedPrompts(self.prompts, instance.instance_id,
                                        lambda: console_output(self.clients, instance.instance_id),
                                        timings.console_wait_s, timings.console_poll_s)
        inner = HostProfile(name=self.profile.name, hostname=instance.instance_id, user=endpoints[-1].user,
                            identity_file=endpoints[-1].identity_file, python=self.profile.python,
                            instance_type=self.launch.instance_type, region=self.launch.region)
        ssh = SshTransport(inner, self.paths, prompts, endpoints=endpoints, on_progress=self.on_progress,
                           connect_timeout=timings.connect_timeout_s)
        self._wait_for_ssh(ssh, endpoints[-1].where)
        verified = f", host key {prompts.verified} matches its console" if prompts.verified else ""
        self._say("ssh up", f"SSH to {instance.instance_id} is up{verified}")
        setup = ssh.setup()
        self._say("deployed", f"agent {'uploaded to' if setup.uploaded else 'already at'} {setup.agent_path} "
                              f"(Python {setup.python_version})")
        self._ssh = ssh
        self._watcher = threading.Thread(target=self._watch, name=f"ec2-watch-{self.host}", daemon=True)
        self._watcher.start()

    def _wait_for_ssh(self, ssh: SshTransport, where: str) -> None:
        """Connect until sshd answers and takes our key (right after boot it may do neither yet)."""
        timings = self.options.timings
        deadline = time.monotonic() + timings.ssh_timeout_s
        while True:
            try:
                ssh.connection()
                return
            except (ConnectError, AuthError) as exc:
                if self._closing:
                    raise CloudError(f"the launch on {self.host} was cancelled; its instance is terminated") \
                        from None
                if time.monotonic() > deadline:
                    raise self._no_ssh(exc, where) from None
            time.sleep(timings.poll_s)

    def _no_ssh(self, exc: NeuronBenchError, where: str) -> NeuronBenchError:
        minutes = self.options.timings.ssh_timeout_s / 60
        if isinstance(exc, AuthError):
            return AuthError(f"{exc} (the instance was started with key pair {self.launch.key_name!r}: --identity "
                             f"must be its private key)", exc.detail)
        group = self.launch.security_group or "the VPC's default security group"
        return ConnectError(f"{where} is running but SSH did not answer within {minutes:g} min: {group} must let "
                            f"TCP port 22 in from this computer (add an inbound rule for your address), or reach "
                            f"instances through a `Host i-*` block in ~/.ssh/config (e.g. Session Manager); "
                            f"last try: {exc}", exc.detail)

    def _watch(self) -> None:
        """Notice an instance taken away mid-run (spot interruption, terminated elsewhere) and cut the stream."""
        while not self._watch_stop.wait(self.options.timings.watch_s):
            instance = self.instance
            if instance is None:
                return
            try:
                description = describe(self.clients, instance.instance_id)
            except CloudError:
                continue  # a network blip: look again next time
            state = state_of(description)
            if state in GONE_STATES or state in ("stopping", "stopped"):
                self.gone = f"{state}: {gone_reason(description)}"
                self._say("gone", f"{instance.instance_id} is {state}: {gone_reason(description)}")
                if self._ssh is not None:
                    self._ssh.close()  # the session's stream ends; its reconnect then hears InstanceGoneError
                return

    def release(self) -> None:
        """Terminate the instance (or keep it with ``keep``); safe to call again, from any thread."""
        with self._release_lock:
            if self._released:
                return
            self._closing = True
            self._watch_stop.set()
            if self._ssh is not None:
                self._ssh.close()
            with self._launch_lock:  # a run_instances in flight answers first, so its instance is known
                instance = self.instance
            self._released = True
        if instance is None:
            return
        if self.options.keep and self.gone is None:
            instance.kept = True
            self.holds.keep(self.host, instance.block())
            self.holds.let_go(instance.instance_id)
            self._say("kept", f"kept {instance.instance_id} for the next run on {self.host} (it still shuts "
                              f"itself down {instance.max_minutes} min after boot)")
            return
        try:
            terminate(self.clients, instance.instance_id)
        except CloudError as exc:
            self.release_error = CloudError(f"could not terminate {instance.instance_id} of {self.host}: {exc}; "
                                            f"terminate it yourself (`neuronbench ec2 cleanup --region "
                                            f"{instance.region}`); it powers itself off {instance.max_minutes} min "
                                            f"after boot at the latest", exc.detail, exc.code)
            self._say("terminate failed", str(self.release_error))
        else:
            instance.terminated_at = time.time()
            self._say("terminated", f"terminated {instance.instance_id}")
        finally:
            self.holds.let_go(instance.instance_id)
