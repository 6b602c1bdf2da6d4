"""Real-browser page loads over an emulated link, site ON (lanefetch helper) vs OFF: the part the page benchmarks
share (chromium-page, firefox-page, seed000-pages).

    with PageLab(PROFILES["wcdma"], [PageShape(77, 1229)], browser="firefox") as pl:
        run = pl.load(shape, "on")        # one fresh-profile load; nginx's log and the link's counters attached
        runs = pl.alternate(shapes, rounds, log=print)   # {shape: {"on": [...], "off": [...]}}

Every load: a fresh browser profile (no HTTP cache) and, for ON, the helper registered into it and the page's host
enabled (`method(browser)` says what that means per browser). Load time = `loadEventEnd - startTime` of the page
that finally loaded, after checking every image decoded. The browser runs in the lab's client namespace; nginx's
access log tells which connection served each image and whether it came pipelined.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self

from lanefetch.bridge.host import TEST_UPSTREAM_CA_ENV
from lanefetch.cache.sqlite_store import DB_NAME

from bench import helper_log, png, report
from bench.cpu_sampler import CpuSampler
from bench.netlab import Host, Lab, LinkProfile
from bench.servers import ServerHandle, start_apache, start_nginx, tls_conf
from bench.tree_cpu import BROWSER, HELPER

REPO = Path(__file__).resolve().parents[2]
#: The driver per browser (same arguments and output, bench/page_measure.ts).
DRIVERS = {b: REPO / f"tests/bench/{b}_page_driver.ts" for b in ("chromium", "firefox")}
BROWSER_NAMES = {"chromium": "Chromium", "firefox": "Firefox"}
MODES = ("on", "off")
_SETUP = {
    "chromium": (
        "Real Chromium (headless, `/usr/lib/chromium/chromium`, built extension) runs in the lab's client namespace; "
        "{server} (HTTP/1.1, keep-alive) behind a packet-level emulated link. Every run: fresh Chromium profile "
        "(no HTTP cache) and, for ON, the helper registered into it, the page's host enabled and a fresh "
        "`XDG_CACHE_HOME` (no helper cache). The page's document is fetched by Chromium itself in both variants "
        "(private page)."
    ),
    "firefox": (
        "Real Firefox ESR (headless, `/usr/bin/firefox-esr`, driven over WebDriver BiDi, built extension installed) "
        "runs in the lab's client namespace; {server} (HTTP/1.1, keep-alive) behind a packet-level emulated link. "
        "Every run: fresh Firefox profile and HOME (no HTTP cache) and, for ON, the helper registered in that HOME, "
        "the page's host enabled and the extension's native port up before the navigation (Firefox starts the helper "
        "when a site is enabled); every request of the page, the document included, then goes through the helper's "
        "proxy (proxy mode has no helper cache: Firefox caches the responses itself), unless the helper's connect "
        "time shows the origin's round trip below 100 ms (`lte`, `lan`): then Firefox fetches them all itself "
        "(step-aside). Turning the site on has the helper connect to its host ahead of any page, so that connect "
        "time is usually known before the navigation."
    ),
}


def method(browser: str, server: str = "nginx", images_checked: bool = True) -> str:
    """How the page benchmarks measure in `browser`, for their reports."""
    if not images_checked:  # real pages: what the page has is what it has
        return _SETUP[browser].format(server=server) + (
            " Load time = `PerformanceNavigationTiming.loadEventEnd - startTime` of the page that finally loaded; its "
            "images are then decoded (`img.decode()`, `naturalWidth > 0`) and counted. Connection counts come from "
            "the server's access log."
        )
    return _SETUP[browser].format(server=server) + (
        " Load time = `PerformanceNavigationTiming.loadEventEnd - startTime` of the page that finally loaded, after "
        "checking every image decoded (`img.decode()`, `naturalWidth > 0`). Image connection and pipelining counts "
        "come from nginx's access log (`$connection`, `$pipe`)."
    )


Run = dict[str, Any]


WARM_PORT = 8080  # the warm copy of each page is another origin: no connection or learned pipelining carries over


class Page(Protocol):
    """What PageLab loads: a page it writes into the docroot and the driver checks."""

    @property
    def name(self) -> str: ...

    @property
    def images(self) -> int | None:
        """The `<img>` elements the driver checks all decoded; None: not checked (a real page's images are what
        they are), the counts are recorded instead."""

    @property
    def requests(self) -> int:
        """How many access log lines one load makes at least (waited for, bounded, before counting)."""

    def path(self, warm: bool = False) -> str: ...

    def write(self, docroot: Path) -> None: ...


@dataclass(frozen=True)
class PageShape:
    """A page of `images` PNG images of exactly `size` bytes each (and a warm copy with other file names)."""

    images: int
    size: int

    @property
    def name(self) -> str:
        return f"{self.images} × {self.size / 1000:.1f} KB"

    @property
    def requests(self) -> int:
        return self.images + 1

    def path(self, warm: bool = False) -> str:
        return f"/p{self.images}x{self.size}{'w' if warm else ''}/index.html"

    def write(self, docroot: Path) -> None:
        for warm in (False, True):
            d = docroot / self.path(warm).strip("/").rsplit("/", 1)[0]
            d.mkdir(parents=True)
            tags = []
            for i in range(self.images):
                data, side = png.noise(self.size, seed=self.images * 100_000 + self.size * 100 + i + 50_000 * warm)
                (d / f"i{i:03d}.png").write_bytes(data)
                tags.append(f'<img src="i{i:03d}.png" width="{side}" height="{side}" alt="">')
            (d / "index.html").write_text(
                "<!doctype html><html><head><meta charset=utf-8><title>lanefetch bench</title>"
                '<link rel="icon" href="data:,"></head><body>\n' + "\n".join(tags) + "\n</body></html>\n"
            )


VARIANT_HEADER = ["variant", "median load s", "range s", "median wall s", "median image conns",
                  "images pipelined (all runs)", "median kB up / down on the link",
                  "queue drops / late packets (all runs)"]


def variant_row(label: str, ds: Sequence[Run]) -> list[str]:
    """One row under VARIANT_HEADER: what the runs of one variant measured."""
    ls = [d["load_s"] for d in ds]
    return [
        label, f"{report.median(ls):.3f}", f"{min(ls):.3f}–{max(ls):.3f}",
        f"{report.median([d['wall_s'] for d in ds]):.3f}", f"{report.median([d['img_conns'] for d in ds]):g}",
        f"{sum(d['img_pipelined'] for d in ds)}/{sum(d['img_requests'] for d in ds)}",
        f"{report.median([d['up_bytes'] for d in ds]) / 1000:.1f} / "
        f"{report.median([d['down_bytes'] for d in ds]) / 1000:.1f}",
        f"{sum(d['up_drops'] + d['down_drops'] for d in ds)} / {sum(d.get('late', 0) for d in ds)}",
    ]


#: The servers PageLab runs: HTTP/1.1 on port 80, and for "nginx-h2" also HTTPS with HTTP/2 on 443 (the page's URL),
#: for "nginx-tls" HTTPS with HTTP/1.1 only.
SERVERS = ("nginx", "apache", "nginx-h2", "nginx-tls")
HTTPS_SERVERS = ("nginx-h2", "nginx-tls")


def _start_server(kind: str, host: Any, docroot: str, ip: str, conf: str, warm_port: bool,
                  pki: Path | None) -> ServerHandle:
    if kind in ("nginx", *HTTPS_SERVERS):
        tls = tls_conf(pki, ip, http2=kind == "nginx-h2") if kind in HTTPS_SERVERS and pki is not None else ""
        return start_nginx(host, docroot, ip,
                           extra_conf=(f"listen {ip}:{WARM_PORT};\n" if warm_port else "") + tls + conf)
    if kind == "apache":
        return start_apache(host, docroot, ip, extra_conf=(f"Listen {ip}:{WARM_PORT}\n" if warm_port else "") + conf)
    raise ValueError(f"no server {kind!r} (have: {', '.join(SERVERS)})")


def _describe_images(d: Run) -> str:
    return (f"load {d['load_s']:.3f} s, wall {d['wall_s']:.3f} s, {d['img_requests']} img reqs on {d['img_conns']} "
            f"conns, {d['img_pipelined']} pipelined, link up {d['up_bytes']} B ({d['up_drops']} drops) down "
            f"{d['down_bytes']} B ({d['down_drops']} drops), {d.get('late', 0)} late")


def empty_http_cache(cache_dir: Path) -> int:
    """Deletes the helper's stored responses (table `entries` of its cache database), keeping its learned pages
    and origins; the number deleted."""
    db = sqlite3.connect(cache_dir / DB_NAME)
    try:
        with db:
            deleted = db.execute("DELETE FROM entries").rowcount
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(deleted)
    finally:
        db.close()


def helper_done(cache_dir: Path) -> None:
    """Until no process holds the helper's cache database open (at most 30 s, else fails): a browser's helper
    records the page's load when the browser quit, after the driver returned."""
    path = cache_dir / DB_NAME
    for _ in range(300):
        if not _open_by_any_process(path):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{path} still open 30 s after the browser quit")


def _open_by_any_process(path: Path) -> bool:
    wanted = {str(path), f"{path}-wal"}
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) in wanted for fd in fd_dir.iterdir()):
                return True
        except OSError:  # the process ended or is not ours to read
            continue
    return False


def _result_line(proc: Any, cpu: CpuSampler) -> tuple[str, bool]:
    """The driver's next line that is not a CPU mark, and whether the load was marked. Each mark (page_measure.ts
    cpuMark: the navigation call, the load event) is a sample of its process tree, then the line the driver waits
    for."""
    marks = []
    while (line := proc.stdout.readline()).startswith('{"cpu":'):
        mark = json.loads(line)["cpu"]
        if mark == "navigating":
            cpu.begin()
        else:
            cpu.end()
        marks.append(mark)
        proc.stdin.write("cpu\n")
        proc.stdin.flush()
    return line, marks == ["navigating", "loaded"]


def helper_line(d: Run) -> str:
    """What the helper's own log said of a load (PageLab._check_helper; Firefox over HTTPS), for its log line."""
    h = d.get("helper")
    if h is None:
        return ""
    if not h["fetched"] and not h["conns"]:
        return "; the helper fetched none of it"
    direct = f", left to the browser: {' '.join(h['direct'])}" if h["direct"] else ""
    tunnelled = (f", {h['tunnelled']} CONNECTs tunnelled to Firefox's own h2 (the origin speaks HTTP/2)"
                 if h.get("tunnelled") else "")
    return (f"; the helper fetched {h['fetched']} of its {h['of']} requests on its connections "
            f"({'+'.join(h['conns']) or 'none opened'}){tunnelled}{direct}")


def breakdown_lines(d: Run) -> str:
    """With LANEFETCH_BENCH_BREAKDOWN, the lines logged after a load's own: the extension's per-request breakdown (ON
    loads in Chromium) and, for every load, ON and OFF, the server's side of it: per request, when it came and when its
    answer ended, ms from the first request's arrival, with its connection (what OFF did is seen only there)."""
    if not os.environ.get("LANEFETCH_BENCH_BREAKDOWN"):
        return ""
    extension = f"\n  breakdown {json.dumps(d['breakdown'])}" if "breakdown" in d else ""
    records: list[Any] = d.get("records", [])
    if not records:
        return extension
    start = min(r.end_time - r.duration for r in records)
    timeline = [f"{(r.end_time - r.duration - start) * 1000:.0f}–{(r.end_time - start) * 1000:.0f} {r.connection} "
                f"{r.request.split(' ')[1] if ' ' in r.request else r.request}"
                for r in sorted(records, key=lambda r: r.end_time - r.duration)]
    return f"{extension}\n  server {json.dumps(timeline, ensure_ascii=False)}"


STEP_ASIDE_BELOW_RTT_MS = 100  # extension/src/intercept/host-speed.ts


class PageLab:
    """A lab (client — link — server) with nginx (or Apache) serving the pages, loaded by `browser`."""

    def __init__(self, profile: LinkProfile, shapes: Sequence[Page], browser: str = "chromium",
                 nginx_conf: str = "", *, server: str = "nginx", warm_port: bool = True, public: bool = False) -> None:
        if browser not in DRIVERS:
            raise ValueError(f"no page driver for {browser!r} (have: {', '.join(DRIVERS)})")
        self.profile = profile
        self.browser = browser
        #: "nginx-h2": the pages over HTTPS (a throwaway CA that the browser and the helper trust, nothing else:
        #: Chromium's NSS store in a HOME of the lab's own, a fresh Firefox profile's store made by the driver),
        #: nginx offering h2 and http/1.1 by ALPN.
        self.https = server in HTTPS_SERVERS
        self._docroot = tempfile.TemporaryDirectory(prefix="lf-bench-pages-")
        self._trust = tempfile.TemporaryDirectory(prefix="lf-bench-trust-") if self.https else None
        self.lab = Lab()
        try:
            for shape in shapes:
                shape.write(Path(self._docroot.name))
            server_host = self.lab.host("server")
            #: The server's TCP congestion control: a new namespace takes the machine's default (BBR on some
            #: machines, CUBIC on Debian's stock kernel), which sets how fast a fresh connection's body ramps up
            #: (BBR paces its second flight at 2.89 × the first's delivery rate: 20 segments spread over about
            #: 0.45 s at 600 ms RTT). LANEFETCH_BENCH_SERVER_CC pins it; the report names what ran.
            self.server_cc = _server_congestion_control(server_host, os.environ.get("LANEFETCH_BENCH_SERVER_CC", ""))
            #: No TCP metrics kept between the server's connections: Linux caches a closed connection's ssthresh
            #: per client address (CUBIC's HyStart leaves slow start early without a loss, and that is cached), so
            #: the next load's connections would start slow start with an earlier one's exit point, and which
            #: variant ran before (ON's helper connections or OFF's one) set the next load's ramp (flask-tutorial
            #: over h2: ON 5.67 and 5.70 s after django-tutorial07's loads, 5.04-5.08 s in runs of its own). Every
            #: load meets the server as a first contact, whichever ran before.
            server_host.run(["sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"], check=True)
            self.client = self.lab.host("client")
            self.link = self.lab.link(self.client, server_host, profile)
            Path(self._docroot.name).chmod(0o755)  # Apache's children (www-data) read it in place
            #: public: the pages on an address the browser, the extension and the helper take for the Internet's
            #: (Lab.public_address), so in Chromium ON the helper fetches the document too, as for a real site.
            self.ip = self.lab.public_address(self.link) if public else self.link.b_ip
            pki = self._make_trust(self.ip) if self._trust is not None else None
            self.srv = _start_server(server, server_host, self._docroot.name, self.ip, nginx_conf, warm_port, pki)
            for shape in shapes:  # the server's page cache warm
                for warm in (False, True) if warm_port else (False,):
                    self.client.run(["curl", "-s", "-k", "-o", "/dev/null", self.url(shape, warm)], check=False,
                                    timeout=60)
        except BaseException:
            self.close()
            raise

    def _make_trust(self, ip: str) -> Path:
        """The test CA and the server's certificate (for `ip`), and an NSS store trusting the CA in the HOME the
        browser runs with (Chromium on Linux reads `$HOME/.pki/nssdb`)."""
        from python.tls_pki import make_test_pki  # tests/python: one throwaway PKI for tests and benchmarks

        assert self._trust is not None
        home = Path(self._trust.name)
        (home / "pki").mkdir()
        pki = make_test_pki(home / "pki", "lanefetch bench CA", ips=(ip,))
        nss = home / ".pki" / "nssdb"
        nss.mkdir(parents=True)
        subprocess.run(["certutil", "-N", "--empty-password", "-d", f"sql:{nss}"], check=True, capture_output=True)
        subprocess.run(["certutil", "-A", "-n", "lanefetch bench CA", "-t", "C,,", "-i", str(pki / "ca.pem"),
                        "-d", f"sql:{nss}"], check=True, capture_output=True)
        return pki

    def url(self, shape: Page, warm: bool = False) -> str:
        if self.https:
            return f"https://{self.ip}{shape.path(warm)}"
        return f"http://{self.ip}{f':{WARM_PORT}' if warm else ''}{shape.path(warm)}"

    def load(self, shape: Page, mode: str, warm: bool = False, repeat: bool = False,
             helper_home: str | None = None, again: bool = False) -> list[Run]:
        """One fresh browser (mode "on" or "off") loading the page, then with `warm` its warm copy in the same
        tab, with `repeat` (Chromium only) the same page again after a browser restart on the same profile
        (caches warm), or with `again` (Chromium only) the same page again in the same tab; per load what the page,
        nginx and the link saw (for a repeat visit also how many 304s). The helper's state (its cache and learned
        pages, in `XDG_CACHE_HOME`) is fresh, or `helper_home`'s."""
        twice = warm or repeat or again
        if (repeat or again) and self.browser != "chromium":
            raise ValueError(f"repeat visits are measured in Chromium only, not {self.browser}")
        images = -1 if shape.images is None else shape.images  # -1: the driver counts, does not check
        argv = ["node", "--import", "tsx", str(DRIVERS[self.browser]), self.url(shape), mode, str(images)]
        argv += [self.url(shape, warm=True)] if warm else ["--repeat"] if repeat else ["--again"] if again else []
        runs: list[Run] = []
        with tempfile.TemporaryDirectory(prefix="lf-bench-cache-") as cache, \
                tempfile.TemporaryFile("w+") as err, contextlib.ExitStack() as stack:
            env = {**os.environ, "XDG_CACHE_HOME": cache, "LANEFETCH_BENCH_CPU_MARKS": "1"}
            if helper_home is not None:  # the harness puts the helper's state with each fresh profile otherwise
                env["LANEFETCH_BENCH_HELPER_CACHE"] = helper_home
            if self._trust is not None:  # the browser's NSS store and the helper trust the lab's CA
                env |= {"HOME": self._trust.name, TEST_UPSTREAM_CA_ENV: f"{self._trust.name}/pki/ca.pem"}
            # Firefox over HTTPS: the helper's own log says what it fetched (ON must have gone through it, OFF not).
            log_file = Path(cache) / "helper.log" if self.https and self.browser == "firefox" else None
            if log_file is not None:
                env |= {"LANEFETCH_LOG": "DEBUG", "LANEFETCH_LOG_FILE": str(log_file)}
            cap = self._capture(shape, mode)
            # Where this load's log lines and link bytes start: taken before the driver may start it (the next
            # load's before the go below), or what it asked for first would be counted as an earlier load's.
            before = len(self.srv.access_log())
            s0 = self._counters()
            proc = self.client.popen(argv, cwd=str(REPO), env=env, stdin=-1, stdout=-1, stderr=err, text=True)
            assert proc.stdin is not None and proc.stdout is not None
            cpu = stack.enter_context(CpuSampler(proc.pid))
            for k in range(2 if twice else 1):
                spent, ended = cpu.seconds(), cpu.ended
                line, marked = _result_line(proc, cpu)  # bounded: the driver's own timeouts end it
                cpu.begin()  # the quiet wait (below): the load's too
                if not line.startswith("{"):
                    proc.wait(timeout=60)
                    err.seek(0)
                    raise RuntimeError(f"driver ({mode}, {shape.name}) failed: {err.read().strip()[-2000:]}")
                data: Run = json.loads(line)
                if (repeat or again) and k == 1:  # a cache answers an unknown part: the document, then stragglers
                    recs = self.srv.access_log(wait_for=before + 1)
                    time.sleep(0.5)
                    recs = self.srv.access_log()[before:]
                    data["not_modified"] = sum(1 for r in recs if r.status == 304)
                else:
                    recs = self.srv.access_log(wait_for=before + shape.requests)[before:]
                imgs = [r for r in recs if r.path.endswith(".png")]
                data["img_requests"] = len(imgs)
                data["img_conns"] = len({r.connection for r in imgs})
                data["img_pipelined"] = sum(1 for r in imgs if r.pipelined)
                data["all_requests"] = len(recs)
                data["conns"] = len({r.connection for r in recs})
                data["records"] = recs
                s1 = self._settled_counters()
                for d in ("up", "down"):
                    a, b = s0.get(d, {}), s1.get(d, {})
                    data[f"{d}_bytes"] = b.get("bytes", 0) - a.get("bytes", 0)
                    data[f"{d}_drops"] = b.get("dropped_queue", 0) - a.get("dropped_queue", 0)
                # Packets the emulator delivered > 2 ms after due (linkemu: short of CPU, as browsers on a busy
                # machine make it): the link was slower than its profile, which T_min and "best possible" assume.
                data["late"] = sum(s1.get(d, {}).get("late_packets", 0) - s0.get(d, {}).get("late_packets", 0)
                                   for d in ("up", "down"))
                cpu.end()
                if marked:  # a driver that marked its navigation call and load event (page_measure.ts cpuMark)
                    now = cpu.seconds()
                    data["cpu_browser_s"] = now[BROWSER] - spent[BROWSER]
                    data["cpu_helper_s"] = now[HELPER] - spent[HELPER]
                    data["cpu_ended"] = cpu.ended - ended  # processes of the tree that ended during the load
                runs.append(data)
                if k == 0 and twice:
                    before, s0 = len(self.srv.access_log()), s1
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
            proc.stdin.close()
            code = proc.wait(timeout=120)
            if cap is not None:
                time.sleep(0.5)  # the last packets of the browser's and the helper's goodbyes
                cap.terminate()
                cap.wait(10)
            if code != 0:
                err.seek(0)
                raise RuntimeError(f"driver ({mode}, {shape.name}) failed at exit: {err.read().strip()[-2000:]}")
            if log_file is not None:
                self._check_helper(shape, mode, runs, log_file)
        return runs

    def _check_helper(self, shape: Page, mode: str, runs: list[Run], log_file: Path) -> None:
        """Fails the load unless ON's requests of the page (those under the page's top folder, as the server
        answered them) were all fetched by the helper, each one as often as the server answered it, and OFF's
        helper fetched nothing: Firefox falls back to a direct connection silently (a tunnel the helper closes, a
        request the extension did not route), and a variant measured that way would be OFF under ON's name. The
        helper's log is appended to LANEFETCH_LOG_FILE's file where the bench was given one. Records per load in
        `helper`: what the helper fetched of the page, the protocols of its connections to the server, the
        requests left to the browser (outside the page's folder: a favicon). An origin the helper learned to speak
        HTTP/2 is left to Firefox by design once known (proxy/server.py: its later CONNECTs are tunnelled, logged):
        then the page's requests after the first tunnel are Firefox's own, counted in `tunnelled`, and only the
        first tunnel's (the document's) must be the helper's."""
        text = log_file.read_text(errors="replace") if log_file.exists() else ""
        if text and (keep := os.environ.get("LANEFETCH_LOG_FILE")):
            with open(keep, "a") as f:
                f.write(text)
        urls = helper_log.fetched(text)
        folder = "/" + shape.path().split("/")[1] + "/"
        tunnelled = helper_log.tunnelled_h2(text, self.ip)
        for d in runs:
            served = [r.path for r in d["records"]]
            left = helper_log.not_fetched(served, urls, self.ip)
            own = [p for p in served if p.startswith(folder)]
            d["helper"] = {"fetched": len(own) - sum(p.startswith(folder) for p in left), "of": len(own),
                           "conns": helper_log.opened(text, self.ip), "direct": left, "tunnelled": tunnelled}
            stepped_aside = d["helper"]["fetched"] == 0 and self.leaves_fast_links()
            d["helper"]["stepped_aside"] = stepped_aside
            if mode == "on" and not stepped_aside and (not own or d["helper"]["fetched"] == 0 or (
                    not tunnelled and any(p.startswith(folder) for p in left))):
                raise RuntimeError(
                    f"ON load of {shape.name} did not go through the helper: of the {len(own)} requests of the page "
                    f"the server answered, the helper's log accounts for {d['helper']['fetched']} (not: "
                    f"{', '.join(p for p in left if p.startswith(folder))[:1500]}); its log:\n{text[-3000:]}")
        if mode == "off" and urls:
            raise RuntimeError(f"OFF load of {shape.name}: a helper fetched {len(urls)} requests ({urls[:5]})")

    def leaves_fast_links(self) -> bool:
        """The link's round trip is below the extension's step-aside threshold (host-speed.ts
        STEP_ASIDE_BELOW_RTT_MS, 100 ms): an ON load whose requests the helper fetched none of was left to the
        browser by design (`lte`), not lost."""
        return (self.profile.rtt_ms or 0) < STEP_ASIDE_BELOW_RTT_MS

    def _capture(self, shape: Page, mode: str) -> subprocess.Popen[bytes] | None:
        """With LANEFETCH_BENCH_PCAP=DIR: the load's packets in the client namespace (headers only) to
        DIR/PAGE-MODE-N.pcap, for `python -m bench.pcap_uplink DIR` (bytes up per connection)."""
        out = os.environ.get("LANEFETCH_BENCH_PCAP")
        if not out:
            return None
        Path(out).mkdir(parents=True, exist_ok=True)
        n = sum(1 for _ in Path(out).glob(f"{shape.name}-{mode}-*.pcap"))
        path = Path(out) / f"{shape.name}-{mode}-{n + 1}.pcap"
        cap = self.client.popen(["tcpdump", "-i", "any", "-n", "-s", "96", "-w", str(path), "tcp"],
                                stderr=subprocess.DEVNULL)
        time.sleep(1)  # tcpdump is listening
        return cap

    def second_visit(self, shape: Page, learning_loads: int = 2, *, keep_stored: bool = False) -> tuple[list[Run], Run]:
        """ON, a page the helper learned: `learning_loads` ON loads (each a fresh browser; the helper
        records each load when the browser quits and it stops), then the helper's HTTP cache emptied with its
        learned pages (and origins) kept — a bench step, no product path empties one without the other (clearing
        the cache forgets the pages too) — then the measured load in a fresh browser (its own cache empty).
        `keep_stored` (Chromium): a revisit, as a returning user makes it. The helper's cache is kept (with servers
        that say `no-cache`, servers.revalidate_conf, every stored response is stale, as once a page's freshness ran
        out), and the last learning load and the measured one are one browser profile, restarted between (the driver's
        --repeat): in debugger mode the browser's own cache holds nothing the helper answered, but it holds what the
        browser fetched itself (a page's favicons: a fresh profile fetched rust-std's 12 kB whole, 1.05 × OFF's
        downlink)."""
        with tempfile.TemporaryDirectory(prefix="lf-bench-learned-") as home:
            Path(home).chmod(0o755)
            learning = []
            for _ in range(learning_loads - 1 if keep_stored else learning_loads):
                learning += self.load(shape, "on", helper_home=home)
                helper_done(Path(home) / "lanefetch")
            if keep_stored:
                *last, measured = self.load(shape, "on", repeat=True, helper_home=home)
                return learning + last, measured
            empty_http_cache(Path(home) / "lanefetch")
            return learning, self.load(shape, "on", helper_home=home)[0]

    def first_visit(self, shape: Page, others: Sequence[Page]) -> tuple[Run, Run]:
        """ON, a page the helper never loaded, by a helper that has loaded other pages (`others`, one ON load each
        in a fresh browser, in that order): so the helper knows this browser's field profile
        (prefetch/field_profile.py; Chromium) and the origins' records (both browsers), as for anyone who used
        lanefetch before, and nothing of `shape` itself. Then
        the helper's stored responses are deleted (a bench step: its learned pages, the others', are kept) and
        `shape` is loaded in a fresh browser (its own cache empty). Returns (the last other page's load, the
        measured one)."""
        with tempfile.TemporaryDirectory(prefix="lf-bench-first-") as home:
            Path(home).chmod(0o755)
            primer = [self.load(other, "on", helper_home=home)[0] for other in others][-1]
            helper_done(Path(home) / "lanefetch")
            empty_http_cache(Path(home) / "lanefetch")
            return primer, self.load(shape, "on", helper_home=home)[0]

    def _settled_counters(self) -> dict[str, Any]:
        """The link's counters once nothing more crosses it: the load event (and the server's log line, written once
        a response is in its socket) can come while a response the load does not wait for is still on its way, up
        to a second of it on `wcdma`; a load's bytes are all it moved. Quiet = no byte either way for two round
        trips (at least 0.5 s); waiting is bounded (15 s), so a link that never goes quiet is read as it is."""
        quiet = max(0.5, 2 * (self.profile.rtt_ms or 0) / 1000)
        last = self._counters()
        still_since = time.monotonic()
        deadline = still_since + 15.0
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now_counts = self._counters()
            moved = any(now_counts.get(d, {}).get("bytes", 0) != last.get(d, {}).get("bytes", 0)
                        for d in ("up", "down"))
            last = now_counts
            if moved:
                still_since = time.monotonic()
            elif time.monotonic() - still_since >= quiet:
                break
        return last

    def _counters(self) -> dict[str, Any]:
        """The emulator's counters (IP packets); on a plain veth link (`lan`) the client device's own (Ethernet
        frames: 14 B more per packet), so ON and OFF are still counted alike."""
        stats = self.link.stats()
        if stats is not None:
            return stats
        base = f"/sys/class/net/{self.link.a_dev}/statistics"
        out = self.client.run(["cat", f"{base}/rx_bytes", f"{base}/tx_bytes"], check=False).stdout.split()
        if len(out) != 2:
            return {}
        return {"down": {"bytes": int(out[0])}, "up": {"bytes": int(out[1])}}

    def alternate(self, shapes: Sequence[Page], rounds: int, log: Callable[[str], None] = print,
                  warm: bool = False, describe: Callable[[Run], str] | None = None) -> dict[Any, dict[str, list[Run]]]:
        """`rounds` browser runs per shape and mode; the order alternates (on/off, off/on) round by round. Keys:
        "on", "off" (first page after the browser started) and with `warm` "on-warm", "off-warm"."""
        keys = [*MODES, *(f"{m}-warm" for m in MODES if warm)]
        runs: dict[Any, dict[str, list[Run]]] = {s: {k: [] for k in keys} for s in shapes}
        for r in range(rounds):
            for shape in shapes:
                for mode in (MODES if r % 2 == 0 else MODES[::-1]):
                    for key, d in zip((mode, f"{mode}-warm"), self.load(shape, mode, warm), strict=False):
                        runs[shape][key].append(d)
                        described = (describe or _describe_images)(d)
                        log(f"round {r + 1} {shape.name} {key}: {described}{breakdown_lines(d)}")
        return runs

    def t_min(self, on_runs: Sequence[Run]) -> float | None:
        """3 RTT (connect, document, images) + the busier direction's serialization of the bytes ON put on the
        link (headers and ACKs included); None on an unlimited link."""
        p = self.profile
        if not (p.down_kbit and p.up_kbit):
            return None
        up = report.median([d["up_bytes"] for d in on_runs])
        down = report.median([d["down_bytes"] for d in on_runs])
        return 3 * p.rtt_ms / 1000 + max(up * 8 / (p.up_kbit * 1000), down * 8 / (p.down_kbit * 1000))

    def close(self) -> None:
        self.lab.close()
        self._docroot.cleanup()
        if self._trust is not None:
            self._trust.cleanup()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _server_congestion_control(host: Host, wanted: str) -> str:
    """Set `wanted` (e.g. cubic, bbr; "" keeps the machine's default) as host's TCP congestion control; returns the
    one in force. A namespace other than the root may only choose one of the root's allowed list
    (net.ipv4.tcp_allowed_congestion_control, global): `wanted` joins that list for the lab's life, then the list is
    as it was."""
    key, allowed = "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_allowed_congestion_control"
    if wanted and host.run(["sysctl", "-qw", f"{key}={wanted}"], check=False).returncode != 0:
        before = subprocess.run(["sysctl", "-n", allowed], capture_output=True, text=True, check=True).stdout.strip()
        if wanted not in before.split():
            def restore() -> None:
                subprocess.run(["sysctl", "-qw", f"{allowed}={before}"], capture_output=True, check=False)
            subprocess.run(["sysctl", "-qw", f"{allowed}={before} {wanted}"], capture_output=True, check=False)
            host.lab.defer(restore)
        done = host.run(["sysctl", "-qw", f"{key}={wanted}"], check=False)
        if done.returncode != 0:
            have = host.run(["sysctl", "-n", "net.ipv4.tcp_available_congestion_control"]).stdout.strip()
            raise RuntimeError(f"LANEFETCH_BENCH_SERVER_CC={wanted!r}: {done.stderr.strip()} (available: {have})")
    return host.run(["sysctl", "-n", key]).stdout.strip()
