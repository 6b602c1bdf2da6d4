"""`lanefetch doctor`: checks what a user can get wrong between the browser and the helper, and says how to
fix each. It reads the registered manifests, starts each registered executable the way a browser does and
exchanges hello with it over native messaging."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import __version__, protocol
from .bridge import browsers as catalogue
from .bridge.install import Target
from .bridge.registry import Registry
from .bridge.system_proxy import Found, WpadLookup, automatic, os_settings, resolve_wpad, run_bounded
from .bridge.system_proxy import detect as detect_system_proxy
from .lanes.interfaces import Interface, PolicyStore, discover

Status = Literal["ok", "warn", "fail", "info"]
MIN_PYTHON = (3, 11)


@dataclass(frozen=True)
class Finding:
    status: Status
    topic: str
    detail: str
    fix: str = ""


def check_python(version: Sequence[int] | None = None, executable: str = sys.executable) -> Finding:
    version = tuple(sys.version_info[:3]) if version is None else tuple(version)
    text = ".".join(str(v) for v in version[:3])
    if tuple(version[:2]) < MIN_PYTHON:
        return Finding("fail", "Python", f"{text} at {executable}; lanefetch needs 3.11 or newer",
                       "install Python 3.11+ and reinstall: pipx install --python python3.11 lanefetch")
    return Finding("ok", "Python", f"{text} at {executable}")


def _read_frame(data: bytes) -> tuple[Any, bytes] | None:
    if len(data) < 4:
        return None
    (n,) = struct.unpack("=I", data[:4])
    if len(data) < 4 + n:
        return None
    return json.loads(data[4 : 4 + n].decode("utf-8")), data[4 + n :]


def hello(executable: Path, args: list[str], family: catalogue.Family, timeout: float = 30.0) -> dict[str, Any]:
    """Start the host as a browser would ([manifest, caller]), send hello, return its answer.
    Raises OSError / TimeoutError / ValueError with a reason."""
    body = json.dumps({"type": "hello", "protocol": protocol.PROTOCOL_VERSION, "extension_version": __version__,
                       "browser": family}).encode()
    proc = subprocess.Popen([str(executable), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        # Closing stdin after hello is the browser closing the port: the host answers, then exits.
        out, err = proc.communicate(struct.pack("=I", len(body)) + body, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise TimeoutError(f"no answer to hello within {timeout:.0f} s") from None
    frame = _read_frame(out)
    if frame is None:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise ValueError(f"exited with status {proc.returncode} without answering hello"
                         + (f": {' | '.join(tail)}" if tail else ""))
    msg = frame[0]
    if not isinstance(msg, dict) or msg.get("type") != "hello":
        raise ValueError(f"answered hello with {str(msg)[:200]}")
    reason = protocol.check(msg, "ToExtension")
    if reason is not None:
        raise ValueError(f"answered with an invalid hello: {reason}")
    return msg


def check_target(t: Target, registry: Registry | None = None, timeout: float = 30.0) -> list[Finding]:
    """One browser's registration: the registry value (Windows), the manifest, then the executable itself."""
    b = catalogue.browser(t.browser)
    topic = b.name
    reinstall = f"lanefetch install --browser {b.id}"
    out: list[Finding] = []
    if t.registry_key is not None:
        value = registry.get_default(t.hive, t.registry_key) if registry is not None else None
        if value is None:
            return [Finding("fail", topic, f"not registered: no registry key {t.hive}\\{t.registry_key}", reinstall)]
        if Path(value) != t.manifest_path:
            out.append(Finding("warn", topic, f"registry key names {value}, not {t.manifest_path}", reinstall))
            t = Target(t.browser, Path(value).parent, t.registry_key, t.hive)
    path = t.manifest_path
    if not path.exists():
        return [Finding("fail", topic, f"not registered: no manifest at {path}", reinstall)]
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return [Finding("fail", topic, f"manifest {path} cannot be read: {e}", reinstall)]
    if not isinstance(m, dict):
        return [Finding("fail", topic, f"manifest {path} is not a JSON object", reinstall)]
    ident = protocol.identity()
    problems = []
    if m.get("name") != ident["native_host_name"]:
        problems.append(f"name is {m.get('name')!r}, not {ident['native_host_name']!r}")
    if m.get("type") != "stdio":
        problems.append(f"type is {m.get('type')!r}, not 'stdio'")
    if b.family == "firefox":
        want_key, want = "allowed_extensions", [ident["firefox_extension_id"]]
    else:
        want_key, want = "allowed_origins", [f"chrome-extension://{ident['chromium_extension_id']}/"]
    if m.get(want_key) != want:
        problems.append(f"{want_key} is {m.get(want_key)!r}, but this lanefetch's extension is {want!r}")
    exe = Path(str(m.get("path", "")))
    if not exe.is_absolute():
        problems.append(f"path {str(exe)!r} is not absolute")
    elif not exe.is_file():
        problems.append(f"path {exe} does not exist (lanefetch moved or was uninstalled?)")
    elif sys.platform != "win32" and not os.access(exe, os.X_OK):
        problems.append(f"path {exe} is not executable")
    if problems:
        return [*out, Finding("fail", topic, f"manifest {path}: " + "; ".join(problems), reinstall)]
    caller = ident["firefox_extension_id"] if b.family == "firefox" else want[0]
    try:
        answer = hello(exe, [str(path), caller], b.family, timeout)
    except (OSError, TimeoutError, ValueError) as e:
        return [*out, Finding("fail", topic, f"{exe} does not work as the helper: {e}",
                              f"reinstall the helper (pipx reinstall lanefetch), then {reinstall}")]
    version = answer["helper_version"]
    if not answer["compatible"]:
        return [*out, Finding("fail", topic, f"{exe} (lanefetch {version}) refuses this version: "
                              f"{answer.get('message', '')}", "install matching versions of helper and extension")]
    out.append(Finding("ok", topic, f"{path} → {exe}: lanefetch {version} answered hello (protocol "
                                    f"{answer['protocol']}, {', '.join(answer['capabilities'])})"))
    if version != __version__:
        out.append(Finding("warn", topic, f"the registered helper is lanefetch {version}, this one is {__version__}",
                           reinstall + " (to register this one)"))
    return out


def check_sandboxed(found: catalogue.Found) -> list[Finding]:
    return [Finding("warn" if s.browser not in found.native else "info", f"{s.browser.name} ({s.kind})",
                    f"found at {s.where}", s.advice) for s in found.sandboxed]


def check_interfaces(interfaces: list[Interface] | None = None, store: PolicyStore | None = None) -> Finding:
    """Which interfaces lanes (one large download split over several) may use now, and why not the others."""
    try:
        store = store if store is not None else PolicyStore.load()
    except ValueError as e:
        return Finding("fail", "Interfaces", str(e), "fix the file, or delete it to start from the defaults")
    try:
        found = interfaces if interfaces is not None else discover()
    except OSError as e:
        return Finding("warn", "Interfaces", f"cannot list network interfaces: {e}")
    usable = [i for i in found if store.why_not(i, allow_metered=False) is None]
    others = [f"{i.name} ({why})" for i in found if not i.loopback and (why := store.why_not(i, False)) is not None]
    rest = f"; not used: {', '.join(others)}" if others else ""
    names = ", ".join(f"{i.name} {'/'.join(i.addresses)}".strip() for i in usable)
    if not usable:
        return Finding("warn", "Interfaces", f"no interface is usable{rest}",
                       "connect to a network (`lanefetch interfaces` shows each interface and its policy)")
    if len(usable) == 1:
        return Finding("info", "Interfaces", f"{names}: one usable interface, so lanes (split downloads) have "
                                             f"nothing to combine{rest}")
    return Finding("ok", "Interfaces", f"lanes can split large downloads over {names}{rest}")


def check_firefox_https(data_dir: Path | None = None) -> Finding:
    """What Firefox HTTPS acceleration installed: each opted-in site's local CA and whether Firefox's store still
    has it (`lanefetch firefox-https status` for the details)."""
    from .proxy import ca_firefox
    from .proxy.ca_sites import https_root, status

    try:
        found = status(https_root(data_dir))
    except (OSError, ValueError) as e:
        return Finding("warn", "Firefox HTTPS", f"cannot read what was installed: {e}",
                       "lanefetch firefox-https remove-all")
    if not found:
        return Finding("info", "Firefox HTTPS", "not enabled: no site is opted in, https:// pages in Firefox load "
                                                "normally, straight from the browser")
    sites = ", ".join(sorted({c["site"].split(":", 1)[1] for c in found}))
    missing = [c for c in found if not all(c["profiles"].values())]
    if not ca_firefox.certutil_available():
        return Finding("warn", "Firefox HTTPS", f"opted in for {sites}, but certutil is not installed",
                       "apt install libnss3-tools (or your system's NSS tools)")
    if missing:
        return Finding("warn", "Firefox HTTPS", f"opted in for {sites}; the certificate of "
                       f"{', '.join(c['site'] for c in missing)} is missing from Firefox's store",
                       "turn HTTPS off and on again for that site in the popup, or lanefetch firefox-https remove-all")
    return Finding("ok", "Firefox HTTPS", f"accelerated on {sites}: a local certificate authority per site, trusted "
                                          "only for that site's names (lanefetch firefox-https status)")


def check_system_proxy(system: Found) -> Finding:
    """A system proxy (bridge/system_proxy.py): a browser left at its default proxy setting follows it, and the
    extension keeps lanefetch off there. Read in doctor's own environment, which may not be the browser's."""
    found = system.where
    if found is None:
        return Finding("ok", "System proxy", "none set: a browser that uses the system's proxy settings (the "
                                             "default) connects directly, as the helper does")
    if system.wpad is not None:  # the setting alone counts for nothing: the server found makes it one
        return Finding("warn", "System proxy",
                       f"automatic proxy detection found a WPAD server at {system.wpad} ({found}). A browser that "
                       "uses the system's proxy settings (the default) asks it which proxy to use, which the helper "
                       "cannot tell without fetching its script, so lanefetch stays off there: its helper connects "
                       "directly and would fetch around the proxy",
                       "nothing to do where your network needs it. Where it has no proxy, turn automatic proxy "
                       "detection off (on Windows: Settings, Network & internet, Proxy, Automatically detect "
                       "settings), or set the browser to use no proxy")
    if automatic(found):  # Windows turns auto-detection on by default: often no proxy is found by it at all
        return Finding("warn", "System proxy",
                       f"set: {found}. A browser that uses the system's proxy settings (the default) follows it, and "
                       "it may pick a proxy, which the helper cannot tell without fetching it, so lanefetch stays off "
                       "there: its helper connects directly and would fetch around the proxy",
                       "nothing to do where your network needs it. Where it has no proxy, turn the automatic proxy "
                       "configuration off (on Windows: Settings, Network & internet, Proxy, Automatically detect "
                       "settings), or set the browser to use no proxy")
    return Finding("warn", "System proxy",
                   f"set: {found}. A browser that uses the system's proxy settings (the default) goes through it, so "
                   "lanefetch stays off there: its helper connects directly and would fetch around the proxy",
                   "nothing to do where this proxy is required. To use lanefetch, the browser must connect without a "
                   "proxy: remove the system proxy, or set the browser to use no proxy, where your network allows it")


def render(findings: list[Finding]) -> str:
    label = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "info": "info"}
    lines = []
    for f in findings:
        lines.append(f"{label[f.status]:<5} {f.topic}: {f.detail}")
        if f.fix:
            lines.append(f"      fix: {f.fix}")
    return "\n".join(lines)


def doctor_targets(choice: str, home: Path, chromium_user_data_dir: Path | None, found: catalogue.Found,
                   platform: str, env: Mapping[str, str], registry: Registry | None) -> list[Target]:
    """The registrations to check: the named browser, or every browser found plus any other one that has a
    manifest (per user or system-wide)."""
    from .bridge.install import targets

    if choice != "all" or chromium_user_data_dir is not None:
        ids = ["chromium" if choice == "all" else choice]
        return targets(ids, home, chromium_user_data_dir, platform=platform, env=env)
    out: list[Target] = []
    for b in catalogue.BROWSERS:
        user, system = (targets([b.id], home, None, system=s, platform=platform, env=env)[0] for s in (False, True))
        if b in found.native or _registered(user, registry):
            out.append(user)
        if _registered(system, registry):
            out.append(system)
    return out


def _registered(t: Target, registry: Registry | None) -> bool:
    if t.registry_key is not None:
        return registry is not None and registry.get_default(t.hive, t.registry_key) is not None
    return t.manifest_path.exists()


def run(choice: str, home: Path, chromium_user_data_dir: Path | None, *, platform: str = sys.platform,
        env: Mapping[str, str] = os.environ, registry: Registry | None = None,
        timeout: float = 30.0) -> list[Finding]:
    os_ = catalogue.current_os(platform)
    if os_ == "windows" and registry is None:
        from .bridge.registry import WindowsRegistry

        registry = WindowsRegistry()
    found = catalogue.detect(os_, home, env)
    findings = [Finding("info", "lanefetch", f"{__version__}, protocol {protocol.PROTOCOL_VERSION}"), check_python()]
    ts = doctor_targets(choice, home, chromium_user_data_dir, found, platform, env, registry)
    if not ts:
        findings.append(Finding("fail", "Browsers", "found none for this user (looked for "
                                + ", ".join(b.name for b in catalogue.BROWSERS) + ")",
                                "install a browser, or name one: lanefetch install --browser chromium"))
    for t in ts:
        findings.extend(check_target(t, registry, timeout))
    findings.extend(check_sandboxed(found))
    wpad = WpadLookup(lambda: resolve_wpad(env))  # looked up in doctor's environment, as the rest
    findings.append(check_system_proxy(detect_system_proxy(env, platform, os_settings, run_bounded, wpad=wpad)))
    findings.append(check_interfaces())
    findings.append(check_firefox_https())
    return findings
