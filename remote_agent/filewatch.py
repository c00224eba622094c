"""Sleeping until a file is written: inotify where the kernel has it, a backed-off poll elsewhere.

Events travel worker -> side file -> supervisor -> ``events.jsonl`` -> follower.  Polling
each hop every 20 ms cost a small-step training up to half its speed on a 2-vCPU host:
every wake-up takes a core from the workload, and a step could wait a poll period at each
hop.  With inotify a reader sleeps in the kernel until a writer appends, and wakes once per
write.  inotify is reached through ctypes on the C library (the agent is stdlib-only); where
it is missing (not Linux, no libc, the per-user limit of instances or watches reached) the
reader falls back to polling with ``Backoff``, as before.

Waking once per write is right for steps of tens of milliseconds, but a 5 ms step makes
every relay process wake 200 times a second, more than the old 20 ms poll did.  So once
writes come faster than ``MIN_GAP_S`` apart, a watch sleeps out the gap first and reads
what gathered in one go (one wake-up per gap, as the poll had); when a gap passes with
nothing written it goes back to sleeping until the next write, which is read at once.
"""
from __future__ import annotations

import ctypes
import errno
import os
import select
import struct
import time
from typing import Callable, Optional, Sequence

POLL_S = 0.02
IDLE_POLL_S = 0.2
MIN_GAP_S = 0.05  # the most often a watch returns while writes keep coming: 20 batches a second at most

_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, 0o2000000
# A write, a new or renamed-in file; the overflow bit arrives unasked (events were dropped: look anyway).
_IN_MODIFY, _IN_CREATE, _IN_MOVED_TO, _IN_Q_OVERFLOW = 0x2, 0x100, 0x80, 0x4000
_WATCH_MASK = _IN_MODIFY | _IN_CREATE | _IN_MOVED_TO
_EVENT_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name

ENV_NO_INOTIFY = "NEURONBENCH_NO_INOTIFY"  # set (to anything) to poll instead: the fallback, on demand


class Backoff:
    """Poll fast while events flow, slower while nothing happens (the fallback without inotify).

    The interval grows 1.5x per idle poll up to ``IDLE_POLL_S`` and drops back at
    the first new event: a step that takes seconds is not polled 50 times a second.
    """

    def __init__(self, fast: float = POLL_S, slow: float = IDLE_POLL_S) -> None:
        self.fast, self.slow, self.interval = fast, slow, fast

    def next(self, active: bool) -> float:
        self.interval = self.fast if active else min(self.slow, self.interval * 1.5)
        return self.interval


def _inotify_fd(folder: str) -> Optional[int]:
    """A non-blocking inotify descriptor watching ``folder``'s files, or None where inotify is unavailable."""
    if os.environ.get(ENV_NO_INOTIFY):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the C library this Python runs on
        init, add_watch = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):  # not Linux (or a libc without inotify)
        return None
    add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
    if fd < 0:  # EMFILE: the user's inotify instances are used up
        return None
    if add_watch(fd, os.fsencode(folder), _WATCH_MASK) < 0:  # ENOSPC (watches used up), ENOENT, EACCES
        os.close(fd)
        return None
    return fd


class FileWatch:
    """Waits until a file in ``folder`` whose name ``wanted`` accepts is written to.

    Create it *before* reading the files: a write that comes between the last read
    and ``wait`` is then already queued and ends the wait at once, so nothing is
    missed.  ``wake_fds`` (e.g. a signal wake-up pipe) end a wait too; their bytes
    are drained here.  ``wait`` may also return early for no reason (a timeout, a
    write to a file that was read already): callers read again and wait again.
    """

    def __init__(self, folder: str, wanted: Callable[[str], bool], wake_fds: Sequence[int] = (),
                 min_gap: float = MIN_GAP_S) -> None:
        self.wanted = wanted
        self.min_gap = min_gap
        self._woken_at = float("-inf")
        self._fast = False  # writes came less than min_gap apart: gather them
        self.wake_fds = list(wake_fds)
        self.fd = _inotify_fd(folder)
        self.backoff = Backoff()
        self.wakeups = 0  # waits that ended (for tests: an idle watcher must not spin)
        self._poller = select.poll()
        for fd in self.wake_fds + ([] if self.fd is None else [self.fd]):
            self._poller.register(fd, select.POLLIN)

    @property
    def kernel_notified(self) -> bool:
        """True when the kernel wakes this watch (inotify); False when it polls."""
        return self.fd is not None

    def fall_back_to_polling(self) -> None:
        """Poll from now on: the kernel does not see these writes (a folder shared from another machine)."""
        if self.fd is not None:
            self._poller.unregister(self.fd)
            os.close(self.fd)
            self.fd = None

    def pending(self) -> bool:
        """True when a change is queued that no wait has consumed yet."""
        return bool(self._poller.poll(0))

    def wait(self, timeout: Optional[float] = None, active: bool = False) -> bool:
        """Sleep until a wanted file changes, a wake fd is readable, or ``timeout`` seconds pass.

        Returns True when woken by a change or a wake fd, False when the time ran out.
        Without inotify this sleeps one poll interval at most (``active``: the last
        read found something, so the next look comes soon).
        """
        if self.fd is None:
            interval = self.backoff.next(active)
            timeout = interval if timeout is None else min(timeout, interval)
        gathered = False
        if self.fd is not None:
            early = self.min_gap - (time.monotonic() - self._woken_at)
            if self._fast and early > 0:  # a fast stream: let it gather, then read it in one go
                time.sleep(early if timeout is None else min(early, timeout))
                gathered = bool(self._poller.poll(0))  # nothing came: back to sleeping until a write
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = self._poller.poll(None if left is None else int(left * 1000 + 0.999))
            self.wakeups += 1
            if not ready:
                return False
            woken = False
            for fd, _mask in ready:
                if fd == self.fd:
                    woken = self._drain_changes() or woken
                else:
                    _drain(fd)
                    woken = True
            if woken:
                now = time.monotonic()
                self._fast = gathered or now - self._woken_at < self.min_gap
                self._woken_at = now
                return True
            # Only other files of the folder changed (a log): keep sleeping.

    def _drain_changes(self) -> bool:
        """Read every queued inotify event; True if one concerns a wanted file (or events were lost)."""
        assert self.fd is not None
        found = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError as exc:
                if exc.errno in (errno.EAGAIN, errno.EINTR):
                    return found
                raise
            offset = 0
            while offset + _EVENT_HEADER.size <= len(data):
                _wd, mask, _cookie, length = _EVENT_HEADER.unpack_from(data, offset)
                offset += _EVENT_HEADER.size
                name = data[offset:offset + length].rstrip(b"\0").decode("utf-8", "replace")
                offset += length
                if mask & _IN_Q_OVERFLOW or self.wanted(name):
                    found = True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _drain(fd: int) -> None:
    """Empty a non-blocking wake-up pipe."""
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass
