"""Why Qt cannot open a window here, in one sentence, instead of Qt's abort and core dump.

Qt ends the process with ``qFatal`` (SIGABRT, a core dump) when no platform
plugin starts, after printing hints that often mislead: on a fresh Debian or
Ubuntu desktop it blames libxcb-cursor0 whatever is missing.  The desktop app
therefore creates its QApplication with Qt's messages held back
(``start_application``): when all is well they are printed as Qt would and
nothing else happens (no subprocess, no file read); when Qt's fatal message
comes, the handler works out what is wrong, says it in one sentence and exits
with status 1 before Qt can abort.

What is wrong with the X11 (xcb) plugin is found the way a person would find it:
``ldd`` on PySide6's ``libqxcb.so`` lists the shared libraries the loader cannot
find, and each maps to its Debian package.  ``python -m app.ui.qt_platform
--install`` (run by ``make app``) installs those packages as root, or prints the
``apt-get install`` line for them.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from PySide6.QtCore import QLibraryInfo, QMessageLogContext, QtMsgType, qFormatLogMessage, qInstallMessageHandler

T = TypeVar("T")

# What Qt's X11 window needs beyond Qt itself, soname -> Debian/Ubuntu package.  The first ten are what a new
# user's fresh desktop lacked (libxcb-xinerama0 is in Qt's own X11 requirements, though Qt 6 no longer links it).
XCB_LIBRARIES = {
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-cursor.so.0": "libxcb-cursor0",
}
# Sonames whose package does not follow Debian's library naming rule (see debian_package).
_PACKAGE_EXCEPTIONS = {
    "libglib-2.0.so.0": "libglib2.0-0", "libgthread-2.0.so.0": "libglib2.0-0",
    "libc.so.6": "libc6", "libm.so.6": "libc6", "libdl.so.2": "libc6", "libpthread.so.0": "libc6",
    "libgcc_s.so.1": "libgcc-s1", "libz.so.1": "zlib1g",
    "libbrotlidec.so.1": "libbrotli1", "libbrotlicommon.so.1": "libbrotli1", "libGLdispatch.so.0": "libglvnd0",
}
_LDD_MISSING = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$", re.MULTILINE)
_PLUGIN_NAMED = re.compile(r'platform plugin "([^"]+)"')
_WAYLAND = ("wayland", "wayland-egl", "wayland-brcm")
_CLI_HINT = "the CLI works without a display (neuronbench --help)"


# -- shared libraries and their packages -------------------------------------------------------------
def debian_package(soname: str) -> str:
    """The Debian package that ships ``soname``: libxcb-icccm.so.4 -> libxcb-icccm4, libEGL.so.1 -> libegl1.

    Debian policy names a library's package after its soname, lower case, with a
    hyphen before the version when the name ends in a digit (libxkbcommon-x11.so.0
    -> libxkbcommon-x11-0); the few that do not are listed.
    """
    if soname in XCB_LIBRARIES:
        return XCB_LIBRARIES[soname]
    if soname in _PACKAGE_EXCEPTIONS:
        return _PACKAGE_EXCEPTIONS[soname]
    name, _, version = soname.partition(".so.")
    name = name.lower()
    version = version.split(".")[0]
    return f"{name}-{version}" if name[-1:].isdigit() else f"{name}{version}"


def missing_from_ldd(output: str) -> list[str]:
    """The sonames ``ldd`` reports as "not found", each once, in its order."""
    return list(dict.fromkeys(_LDD_MISSING.findall(output)))


def packages_for(sonames: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(debian_package(s) for s in sonames))


def apt_get_line(packages: Sequence[str]) -> str:
    return f"sudo apt-get install -y {' '.join(packages)}"


def xcb_plugin_file() -> Path | None:
    """PySide6's X11 platform plugin (``libqxcb.so``), where this Qt keeps its plugins."""
    path = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms" / "libqxcb.so"
    return path if path.is_file() else None


def ldd_missing(library: Path | None) -> list[str]:
    """What the loader cannot find for ``library`` (``ldd``; empty when ldd is not there or says nothing)."""
    ldd = shutil.which("ldd")
    if library is None or ldd is None:
        return []
    try:
        out = subprocess.run([ldd, str(library)], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    return missing_from_ldd(out.stdout)


def _ldconfig_sonames() -> set[str] | None:
    ldconfig = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig")
                                                 if os.path.exists(p)), None)
    if ldconfig is None:
        return None
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {line.split()[0] for line in out.splitlines()[1:] if line.strip()}


def window_packages_missing() -> list[str]:
    """Debian packages the desktop window needs that this machine lacks: what ldd finds, and XCB_LIBRARIES'."""
    missing = ldd_missing(xcb_plugin_file())
    known = _ldconfig_sonames()
    if known is not None:
        missing += [soname for soname in XCB_LIBRARIES if soname not in known]
    return packages_for(missing)


# -- the display and the platform plugin ---------------------------------------------------------------
def _platforms(env: Mapping[str, str]) -> list[str]:
    """The platform plugins Qt will try, from QT_QPA_PLATFORM ("wayland;xcb", "xcb:option"), [] for its default."""
    return [p.split(":")[0].strip() for p in env.get("QT_QPA_PLATFORM", "").split(";") if p.strip()]


def display_problem(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> str | None:
    """Why no window can open here (no display for the platform Qt will use), as a sentence; None when one can."""
    env = os.environ if env is None else env
    if not platform.startswith("linux"):
        return None
    chosen = _platforms(env)
    x11, wayland = bool(env.get("DISPLAY")), bool(env.get("WAYLAND_DISPLAY"))
    if any(p not in ("xcb", *_WAYLAND) for p in chosen):
        return None  # offscreen, vnc, eglfs...: no desktop session needed
    if not x11 and not wayland:
        return ("no display to open the desktop app on (DISPLAY and WAYLAND_DISPLAY are unset): use the CLI "
                "(neuronbench --help), or run it where a desktop session is")
    if chosen and all(p == "xcb" for p in chosen) and not x11:
        return (f"QT_QPA_PLATFORM={env['QT_QPA_PLATFORM']} asks for an X11 display but DISPLAY is unset: unset "
                f"QT_QPA_PLATFORM to use this Wayland session, or run it where an X display is; {_CLI_HINT}")
    if chosen and all(p in _WAYLAND for p in chosen) and not wayland:
        return (f"QT_QPA_PLATFORM={env['QT_QPA_PLATFORM']} asks for a Wayland display but WAYLAND_DISPLAY is unset: "
                f"unset QT_QPA_PLATFORM to use this X11 session; {_CLI_HINT}")
    return None


def platform_failure(messages: Sequence[str], env: Mapping[str, str] | None = None,
                     missing: Callable[[], list[str]] | None = None) -> str:
    """One sentence for Qt's failure to start a platform plugin, from the messages Qt gave on its way down.

    ``missing`` returns the X11 plugin's missing sonames (``ldd``); it is only called when xcb failed.
    """
    env = os.environ if env is None else env
    text = "\n".join(messages)
    named = _PLUGIN_NAMED.findall(text)
    plugin = named[-1] if named else (_platforms(env) or ["xcb"])[0]
    if plugin == "xcb":
        sonames = (missing or (lambda: ldd_missing(xcb_plugin_file())))()
        if sonames:
            return (f"Qt's X11 (xcb) platform plugin cannot load because these system libraries are missing: "
                    f"{', '.join(sonames)}; install them with `{apt_get_line(packages_for(sonames))}` "
                    f"(`make app` does it as root), and meanwhile {_CLI_HINT}")
        if "could not connect to display" in text:
            return (f"Qt could not connect to the X display {env.get('DISPLAY', '')!r}: check that the X server is "
                    f"running and that this user may use it (XAUTHORITY, xhost); {_CLI_HINT}")
    if plugin in _WAYLAND and "even though it was found" in text:
        return (f"Qt could not connect to the Wayland display {env.get('WAYLAND_DISPLAY', '')!r}: try "
                f"QT_QPA_PLATFORM=xcb where an X server is; {_CLI_HINT}")
    reason = next((m.strip().splitlines()[0] for m in messages if m.strip() and "failed to start" not in m), None)
    available = re.search(r"Available platform plugins are: ([^\n]+?)\.?\s*$", text, re.MULTILINE)
    return (f"Qt could not start its {plugin!r} platform plugin ({reason or 'no reason given'}); set "
            f"QT_QPA_PLATFORM to one that works here"
            + (f" ({available.group(1)})" if available else "") + f"; {_CLI_HINT}")


def start_application(make: Callable[[], T], exit_status: int = 1) -> T:
    """``make()`` (which creates the QApplication) with Qt's messages held back until it returns.

    If Qt gives up on its platform plugin, print one sentence and leave with
    ``exit_status`` before Qt can abort; otherwise print what Qt said, as it would have.
    """
    held: list[tuple[QtMsgType, QMessageLogContext, str]] = []

    def handler(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
        if mode == QtMsgType.QtFatalMsg:
            sentence = platform_failure([m for _, _, m in held] + [message])
            sys.stderr.write(f"neuronbench: error: {sentence}\n")
            sys.stderr.flush()
            os._exit(exit_status)  # Qt would abort() right after this handler returns
        held.append((mode, context, message))

    previous = qInstallMessageHandler(handler)
    try:
        made = make()
    finally:
        qInstallMessageHandler(previous)
    for mode, context, message in held:
        sys.stderr.write(qFormatLogMessage(mode, context, message) + "\n")
    return made


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m app.ui.qt_platform [--install]``: the Debian packages the window lacks (``make app``).

    With ``--install``, as root where apt-get exists, installs them; otherwise prints
    the ``apt-get install`` line.  Always exits 0: the app is started next either way,
    and says itself what stops it.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not sys.platform.startswith("linux"):
        return 0
    packages = window_packages_missing()
    if not packages:
        return 0
    apt_get = shutil.which("apt-get")
    if "--install" in args and apt_get and os.geteuid() == 0:
        print(f"installing what the desktop window needs: {' '.join(packages)}", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        installed = subprocess.run([apt_get, "update", "-qq"], env=env).returncode == 0 and subprocess.run(
            [apt_get, "install", "-y", "-qq", *packages], env=env, stdout=subprocess.DEVNULL).returncode == 0
        if installed:
            return 0
    print(f"the desktop window needs these Debian packages, missing here: {' '.join(packages)}; install them "
          f"with: {apt_get_line(packages)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
