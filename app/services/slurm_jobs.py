"""Slurm's commands on a cluster's login node, over the host's SSH connection: submit, look, cancel.

``sbatch``, ``squeue``, ``scontrol`` and ``scancel`` run in the login session
(``remote_exec.run_command``: every argument quoted), so they see the cluster's
``SLURM_CONF`` and the user's Slurm environment as a shell there would.  What
Slurm says when it refuses a job becomes the one sentence of a SchedulerError.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from app.core.errors import ConnectError, SchedulerError
from app.core.slurm import SQUEUE_FORMAT, JobState, parse_scontrol_job, parse_squeue, refusal_sentence
from app.services.remote_exec import CommandResult, run_command
from app.services.ssh_transport import SshTransport

Runner = Callable[[Sequence[str], "bytes | None"], CommandResult]


class SlurmJobs:
    """Slurm on one login node.  ``runner`` runs one command there (argv, stdin) to its end."""

    def __init__(self, runner: Runner, host: str) -> None:
        self._run = runner
        self.host = host

    @classmethod
    def over_ssh(cls, transport: SshTransport) -> SlurmJobs:
        """Through an SshTransport's connection (reopened if it dropped)."""
        def runner(argv: Sequence[str], stdin: bytes | None) -> CommandResult:
            return run_command(transport.connection().transport, list(argv), stdin=stdin, timeout=60)

        return cls(runner, transport.host)

    def submit(self, argv: Sequence[str], script: str, partition: str = "") -> str:
        """``sbatch --parsable ...`` with the script on stdin; the job id.  Slurm's refusal raises SchedulerError."""
        result = self._run(argv, script.encode("utf-8"))
        stderr = result.stderr.decode("utf-8", "replace")
        if result.code is None:
            raise ConnectError(f"the connection to {self.host} broke while sbatch ran; look for a job named "
                               f"{_job_name(argv)} with squeue before running again")
        if result.code != 0:
            if result.code == 127 or "command not found" in stderr:
                raise SchedulerError(f"{self.host} has no sbatch on its PATH: is it a Slurm login node?",
                                     detail=stderr)
            raise SchedulerError(refusal_sentence(stderr, partition), detail=stderr)
        job_id = result.text().strip().split(";")[0].strip()  # --parsable: "ID" or "ID;cluster"
        if not job_id.isdigit():
            raise SchedulerError(f"sbatch on {self.host} answered {result.text().strip()[:80]!r} instead of a job id",
                                 detail=stderr)
        return job_id

    def state(self, job_id: str) -> JobState | None:
        """The job's state and reason (squeue, else ``scontrol show job`` once it has left the queue)."""
        result = self._run(["squeue", "-h", "-j", job_id, "-o", SQUEUE_FORMAT], None)
        found = parse_squeue(job_id, result.text()) if result.code == 0 else None
        if found is not None:
            return found
        shown = self._run(["scontrol", "show", "job", job_id], None)
        return parse_scontrol_job(job_id, shown.text()) if shown.code == 0 else None

    def cancel(self, job_id: str) -> None:
        """``scancel ID``: Slurm signals every process of the job on every node (a job already gone is fine)."""
        result = self._run(["scancel", job_id], None)
        if result.code not in (0, None):
            stderr = result.stderr.decode("utf-8", "replace")
            if "already completing or completed" in stderr or "Invalid job id" in stderr:
                return
            raise SchedulerError(f"scancel {job_id} on {self.host} failed: {result.stderr_line()}", detail=stderr)

    def all_exist(self, paths: Sequence[str]) -> bool:
        """Whether every one of ``paths`` is a file on the login node (the nodes write to the shared home)."""
        result = self._run(["sh", "-c", 'for f; do [ -f "$f" ] || exit 1; done', "sh", *paths], None)
        return result.code == 0

    def output_tail(self, path: str, lines: int = 15) -> str:
        """The last lines of the job's output file (why a job ended before its nodes started)."""
        result = self._run(["tail", "-n", str(lines), path], None)
        return result.text().strip() if result.code == 0 else ""


def _job_name(argv: Sequence[str]) -> str:
    return next((a.split("=", 1)[1] for a in argv if a.startswith("--job-name=")), "neuronbench-...")
