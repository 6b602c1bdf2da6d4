"""`npm start`: the demo site on nginx behind an emulated slow link, in Chromium (or Firefox) with the extension.

With a display: opens the browser (window) with the extension in a throwaway profile, the helper registered and
the demo site enabled, on the demo page (Chromium: the timing page in a second tab); closing the window (or
Ctrl-C) ends the demo. Without a display or with --headless: loads the page with the site OFF and then ON, prints
the comparison and a short summary, and writes into the output directory the page OFF and ON side by side (with
both load times), the timing page's screenshot, the per-request table, the ON load's HAR file and the raw timings.

The browser runs in the lab's client namespace, so it (and the helper it starts) reach the site only through
the emulated link. Everything the demo creates (namespaces, processes, profiles) is removed on exit and Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.netlab import PROFILES, Lab, Link
from bench.servers import ServerHandle, start_nginx
from PIL import Image

from demo import compose, site, tables
from demo.load import Load

REPO = Path(__file__).resolve().parents[2]
DRIVERS = {"chromium": REPO / "tests/demo/chromium_driver.ts", "firefox": REPO / "tests/demo/firefox_driver.ts"}
LANEFETCH = REPO / ".venv/bin/lanefetch"
DEFAULT_OUT = REPO / "tests/demo/output"


class Demo:
    def __init__(self, lab: Lab, link_name: str, work: Path, browser: str) -> None:
        self.lab = lab
        self.work = work
        self.link_name = link_name
        self.link_profile = PROFILES[link_name]
        self.browser = browser
        self.server = lab.host("server")
        self.client = lab.host("client")
        self.link: Link = lab.link(self.client, self.server, PROFILES[link_name])
        docroot = work / "site"
        self.subresources = site.build(docroot, browser, link_name, PROFILES[link_name])
        self.srv: ServerHandle = start_nginx(self.server, docroot, self.link.b_ip)
        self.url = f"http://{self.link.b_ip}/index.html"
        self.client.run(["curl", "-s", "-o", "/dev/null", self.url], check=False, timeout=60)  # nginx warm

    def _profile(self, name: str, on: bool) -> Path:
        """A throwaway Chromium user-data-dir; for ON the helper is registered into it. (The Firefox driver makes
        its own throwaway HOME under $TMPDIR and registers the helper there.)"""
        d = self.work / f"profile-{name}"
        d.mkdir()
        if on and self.browser == "chromium":
            subprocess.run([str(LANEFETCH), "install", "--browser", "chromium", "--chromium-user-data-dir", str(d)],
                           check=True, capture_output=True, timeout=60)
        return d

    def _driver(self, name: str, on: bool, window: bool, files: dict[str, Path]) -> subprocess.Popen[str]:
        """files: where the driver writes "screenshot", "panel_screenshot" (the timing page), "har"."""
        options: dict[str, Any] = {"url": self.url, "profile": str(self._profile(name, on)), "on": on, "window": window}
        options.update({key: str(path) for key, path in files.items()})
        cache = self.work / f"cache-{name}"  # a fresh helper cache: the demo shows the network, not a cache hit
        env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
        if self.browser == "firefox":  # its throwaway HOME goes with the demo's work directory, whatever happens
            env["TMPDIR"] = str(self.work)
        driver = DRIVERS[self.browser]
        return self.client.popen(["node", "--import", "tsx", str(driver), json.dumps(options)], cwd=str(REPO),
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def _read_load(self, proc: subprocess.Popen[str], before: tuple[int, dict[str, Any]]) -> Load:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("{"):
            err = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
            raise RuntimeError(f"the browser driver failed: {line.strip()} {err.strip()[-2000:]}")
        page: dict[str, Any] = json.loads(line)
        n0, s0 = before
        records = self.srv.access_log(wait_for=n0 + 1 + self.subresources, timeout=10)[n0:]
        subs = [r for r in records if not r.path.endswith("/index.html")]
        s1 = self.link.stats() or {}
        def delta(key: str, d: str) -> int:
            return int(s1.get(d, {}).get(key, 0) - s0.get(d, {}).get(key, 0))

        return Load(page, len(subs), len({r.connection for r in subs}), sum(1 for r in subs if r.pipelined),
                    delta("bytes", "up"), delta("bytes", "down"),
                    delta("dropped_queue", "up") + delta("dropped_queue", "down"))

    def _mark(self) -> tuple[int, dict[str, Any]]:
        return len(self.srv.access_log()), self.link.stats() or {}

    def load(self, name: str, on: bool, files: dict[str, Path]) -> Load:
        before = self._mark()
        proc = self._driver(name, on, window=False, files=files)
        load = self._read_load(proc, before)
        proc.wait(timeout=60)
        return load

    def show(self, out: Path) -> int:
        before = self._mark()
        proc = self._driver("window", on=True, window=True, files={})
        load = self._read_load(proc, before)
        print(f"\nThe demo page loaded in {load.page['load_s']:.2f} s with lanefetch ON.")
        print("\n".join(tables.summary(load)))
        out.mkdir(parents=True, exist_ok=True)
        (out / "requests.md").write_text(tables.requests_file(load.page))
        print(f"What lanefetch did with each request: {out / 'requests.md'}\n")
        print("\nThe browser's other tab is lanefetch's timing page for the demo page: every request as a bar "
              "(queued, connect, sending, waiting, receiving), grouped by connection; it follows each reload. "
              "The same view is in DevTools (F12) under the 'lanefetch' panel.")
        print("Turn the site off and on with the lanefetch toolbar button and reload to compare. "
              "Close the browser window (or press Ctrl-C here) to end the demo.", flush=True)
        return proc.wait()


def _setting(demo: Demo) -> str:
    """The browser and link, in the words of the pictures' captions."""
    link = demo.link_profile
    rate = f", {link.down_kbit:g}/{link.up_kbit or 0:g} kbit/s" if link.down_kbit else ""
    return f"{demo.browser.capitalize()}, emulated `{demo.link_name}` link (RTT {link.rtt_ms:g} ms{rate})"


def _headless(demo: Demo, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    browser = demo.browser.capitalize()
    for stale in ("page.png", "timing-panel.png", "page.har", "requests.md", "timings.json"):
        (out / stale).unlink(missing_ok=True)  # an earlier run's files must not pass for this one's
    shots = demo.work / "shots"
    shots.mkdir()
    print(f"Loading the demo page with lanefetch OFF ({browser} alone)…", flush=True)
    off = demo.load("off", on=False, files={"screenshot": shots / "page-off.png"})
    print("Loading the demo page with lanefetch ON…", flush=True)
    files = {"screenshot": shots / "page-on.png", "panel_screenshot": shots / "timing-page.png",
             "har": out / "page.har"}
    on = demo.load("on", on=True, files=files)
    off_s, on_s = off.page["load_s"], on.page["load_s"]
    with Image.open(shots / "page-off.png") as off_shot, Image.open(shots / "page-on.png") as on_shot:
        compose.side_by_side(off_shot, on_shot, off_s, on_s, _setting(demo)).save(out / "page.png")
    with Image.open(shots / "timing-page.png") as panel:
        compose.captioned(panel, [
            f"lanefetch's timing page for the ON load ({browser}): measured {on_s:.2f} s to the load event",
            f"The same page with lanefetch OFF measured {off_s:.2f} s. The timing page's \"same, without pipelining "
            "(estimate)\" is not that measurement: it is lanefetch's model of the helper's own requests sent one at "
            "a time.",
        ]).save(out / "timing-panel.png")
    (out / "requests.md").write_text(tables.requests_file(on.page))
    summary = {"url": demo.url, "off": off.__dict__, "on": on.__dict__}
    (out / "timings.json").write_text(json.dumps(summary, indent=1) + "\n")
    print()
    print("\n".join(tables.comparison(off, on)))
    print()
    print("\n".join(tables.summary(on)))
    print(f"\nWritten into {out}/:")
    print("  page.png          the demo page OFF and ON side by side, with both load times and the speed-up")
    print("  timing-panel.png  lanefetch's timing page for the ON load: one bar per request, grouped by connection")
    print("  requests.md       what lanefetch did with each request of the ON load (a table, one row per request)")
    print(f"  page.har          the ON load as HAR 1.2 ({on.page['har_entries']} requests; checked against the HAR "
          "schema), for any HAR viewer")
    print("  timings.json      both loads: the measurements above and lanefetch's raw per-request records")
    return 0


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="npm start --", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--headless", action="store_true", help="no window: load OFF and ON, print the comparison")
    p.add_argument("--browser", choices=["chromium", "firefox"], default="chromium")
    p.add_argument("--link", choices=sorted(PROFILES), default="wcdma", help="emulated link profile (default wcdma)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where the demo writes (default {DEFAULT_OUT})")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("npm start needs root: the demo puts the browser and the site in network namespaces joined by an "
              "emulated link. Run it as root (e.g. `sudo npm start`).", file=sys.stderr)
        return 1
    window = _has_display() and not args.headless
    link = PROFILES[args.link]
    print(f"lanefetch demo: nginx behind an emulated `{args.link}` link (RTT {link.rtt_ms:g} ms, "
          f"{link.down_kbit or 'unlimited'} kbit/s down, {link.up_kbit or 'unlimited'} kbit/s up).", flush=True)
    if not window and not args.headless:
        print("No display ($DISPLAY and $WAYLAND_DISPLAY are unset): running headless.", flush=True)
    work = Path(tempfile.mkdtemp(prefix="lf-demo-"))
    try:
        with Lab() as lab:
            demo = Demo(lab, args.link, work, args.browser)
            print(f"Demo site: {demo.url} (reachable only inside the demo's network namespaces)", flush=True)
            if window:
                return demo.show(args.out.resolve())
            return _headless(demo, args.out.resolve())
    except KeyboardInterrupt:
        print("\nnpm start: interrupted; namespaces and processes removed.", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
