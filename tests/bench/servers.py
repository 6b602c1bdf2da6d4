"""Real nginx and Apache servers inside a lab host, with parseable access logs.

    srv = start_nginx(server, docroot, link.b_ip, 80, keepalive_requests=1000)
    ... requests ...
    for rec in srv.access_log(): rec.connection, rec.request_no, rec.pipelined, rec.status, ...
    srv.stop()            # optional: the lab stops it on exit; logs stay readable until the lab closes

Each server gets a private work dir (config, pid file, logs, temp paths) removed when the lab closes.
nginx runs its worker as root, so any docroot works; Apache refuses to serve as root and runs its
children as www-data, so a docroot they cannot read (e.g. a 0700 pytest tmp_path) is copied first.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench.netlab import Host, stop_process

APACHE_MODULES = Path("/usr/lib/apache2/modules")
READY_TIMEOUT = 10.0


@dataclass(frozen=True)
class AccessRecord:
    """One access log line, the same shape for both servers."""

    connection: str  # nginx $connection serial; Apache "addr:port" of the client
    request_no: int  # 1-based request number on that connection (Apache: counted in log order)
    pipelined: bool | None  # nginx $pipe == "p"; None for Apache (it does not log it)
    remote_addr: str
    remote_port: int
    status: int
    body_bytes: int
    end_time: float  # epoch seconds when the response was finished
    duration: float  # seconds spent on the request
    request: str  # request line, e.g. "GET /a.css HTTP/1.1"

    @property
    def method(self) -> str:
        return self.request.split(" ", 1)[0]

    @property
    def path(self) -> str:
        parts = self.request.split(" ")
        return parts[1] if len(parts) > 1 else ""


# nginx: tab-separated, request line last (it may contain anything but tabs: nginx escapes those).
_NGINX_FORMAT = (
    "$connection\\t$connection_requests\\t$pipe\\t$remote_addr\\t$remote_port\\t"
    "$status\\t$body_bytes_sent\\t$msec\\t$request_time\\t$request"
)
# Apache: %D is microseconds. Its %k does not count pipelined requests (they never enter keepalive
# state), so request_no is counted per client addr:port in log order instead.
_APACHE_FORMAT = "%a\\t%{remote}p\\t%>s\\t%B\\t%{end:sec}t.%{end:usec_frac}t\\t%D\\t%r"


def _parse_nginx(f: list[str]) -> AccessRecord:
    return AccessRecord(
        connection=f[0], request_no=int(f[1]), pipelined=f[2] == "p", remote_addr=f[3],
        remote_port=int(f[4]), status=int(f[5]), body_bytes=int(f[6]), end_time=float(f[7]),
        duration=float(f[8]), request=f[9],
    )


def _parse_apache(f: list[str]) -> AccessRecord:
    return AccessRecord(
        connection=f"{f[0]}:{f[1]}", request_no=0, pipelined=None, remote_addr=f[0],
        remote_port=int(f[1]), status=int(f[2]), body_bytes=0 if f[3] == "-" else int(f[3]),
        end_time=float(f[4]), duration=int(f[5]) / 1e6, request=f[6],
    )


def _number_requests(records: list[AccessRecord]) -> list[AccessRecord]:
    seen: dict[str, int] = {}
    out = []
    for r in records:
        seen[r.connection] = seen.get(r.connection, 0) + 1
        out.append(replace(r, request_no=seen[r.connection]))
    return out


_PARSERS = {"nginx": (_parse_nginx, 10), "apache": (_parse_apache, 7)}


@dataclass
class ServerHandle:
    kind: str  # "nginx" | "apache"
    host: Host
    ip: str
    port: int
    workdir: Path
    process: subprocess.Popen[bytes]
    scheme: str = "http"  # "https" when started with tls

    def url(self, path: str = "/") -> str:
        return f"{self.scheme}://{self.ip}:{self.port}{path}"

    @property
    def access_log_path(self) -> Path:
        return self.workdir / "access.log"

    def access_log(self, wait_for: int = 0, timeout: float = 5.0) -> list[AccessRecord]:
        """Parsed access log records, after waiting (bounded) until there are at least ``wait_for``.

        A line is written when a request is finished; nginx finishes a ``Connection: close`` request
        only after its lingering close, i.e. once the client has closed its socket too.
        """
        parse, nfields = _PARSERS[self.kind]
        deadline = time.monotonic() + timeout
        while True:
            text = self.access_log_path.read_text(errors="replace") if self.access_log_path.exists() else ""
            records = [parse(line.split("\t", nfields - 1)) for line in text.splitlines() if line]
            if len(records) >= wait_for or time.monotonic() > deadline:
                return _number_requests(records) if self.kind == "apache" else records
            time.sleep(0.05)

    def error_log(self) -> str:
        p = self.workdir / "error.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def stop(self) -> None:
        stop_process(self.process)


def start_nginx(
    host: Host,
    docroot: str | os.PathLike[str],
    listen_ip: str,
    port: int = 80,
    *,
    keepalive_requests: int = 1000,
    extra_conf: str = "",
    tls: tuple[Path, Path] | None = None,
    http2: bool = False,
) -> ServerHandle:
    """nginx (master + 1 worker, foreground) serving docroot on listen_ip:port inside host.

    ``extra_conf`` is pasted into the server block (e.g. ``"sendfile off;"`` or locations).
    ``tls=(certificate, key)`` serves HTTPS; with ``http2`` it offers h2 then http/1.1 in ALPN (the access
    log's request line then ends in "HTTP/2.0").
    """
    work = _workdir(host, "nginx")
    listen = f"{listen_ip}:{port}"
    if tls is not None:
        listen += " ssl" + (" http2" if http2 else "")
        # TLS 1.3 named: nginx 1.22's default protocols stop at TLS 1.2 (1.3 joined them in 1.23.4), whose
        # handshake costs a second round trip that sites of today do not.
        extra_conf = (f"ssl_certificate {tls[0]};\n        ssl_certificate_key {tls[1]};\n"
                      f"        ssl_protocols TLSv1.2 TLSv1.3;\n        {extra_conf}")
    else:
        assert not http2, "h2 here is over TLS only (no h2c)"
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (work / d).mkdir()
    conf = f"""
daemon off;
master_process on;
worker_processes 1;
user root;
pid {work}/nginx.pid;
error_log {work}/error.log notice;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format lab "{_NGINX_FORMAT}";
    access_log {work}/access.log lab;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    sendfile on;
    keepalive_timeout 65s;
    keepalive_requests {keepalive_requests};
    server {{
        listen {listen};
        root {Path(docroot).resolve()};
        {extra_conf}
    }}
}}
"""
    (work / "nginx.conf").write_text(conf)
    argv = ["nginx", "-p", str(work), "-e", str(work / "error.log"), "-c", str(work / "nginx.conf")]
    handle = _start(host, "nginx", argv, work, listen_ip, port)
    handle.scheme = "https" if tls is not None else "http"
    return handle


def start_apache(
    host: Host,
    docroot: str | os.PathLike[str],
    listen_ip: str,
    port: int = 80,
    *,
    max_keepalive_requests: int = 100,
    extra_conf: str = "",
    tls: tuple[Path, Path] | None = None,
    http2: bool = False,
) -> ServerHandle:
    """Apache httpd (mpm_event, foreground, standalone config) serving docroot on listen_ip:port.

    ``tls=(certificate, key)`` serves HTTPS (mod_ssl); with ``http2`` it offers h2 then http/1.1 in ALPN
    (mod_http2, ``Protocols h2 http/1.1``). The access log's request line ends in the protocol used
    ("HTTP/2.0" over h2)."""
    work = _workdir(host, "apache")
    root = _readable_docroot(Path(docroot).resolve(), work)
    mods = ["mpm_event", "authz_core", "mime", "dir"]
    if tls is not None:
        mods += ["socache_shmcb", "ssl"]
        extra_conf = (f"SSLEngine on\nSSLCertificateFile {tls[0]}\nSSLCertificateKeyFile {tls[1]}\n"
                      f"SSLSessionCache shmcb:{work}/ssl_scache(512000)\n{extra_conf}")
    if http2:
        assert tls is not None, "h2 here is over TLS only (no h2c)"
        mods.append("http2")
        extra_conf = f"Protocols h2 http/1.1\n{extra_conf}"
    load = "\n".join(f"LoadModule {m}_module {APACHE_MODULES}/mod_{m}.so" for m in mods)
    conf = f"""
ServerRoot {work}
ServerName lab
Listen {listen_ip}:{port}
{load}
PidFile {work}/apache.pid
DefaultRuntimeDir {work}
Mutex file:{work} default
ErrorLog {work}/error.log
LogLevel warn
User www-data
Group www-data
StartServers 1
KeepAlive On
MaxKeepAliveRequests {max_keepalive_requests}
KeepAliveTimeout 65
TypesConfig /etc/mime.types
DocumentRoot {root}
<Directory {root}>
    Require all granted
</Directory>
LogFormat "{_APACHE_FORMAT}" lab
CustomLog {work}/access.log lab
{extra_conf}
"""
    (work / "apache.conf").write_text(conf)
    argv = ["apache2", "-f", str(work / "apache.conf"), "-DFOREGROUND"]
    handle = _start(host, "apache", argv, work, listen_ip, port)
    handle.scheme = "https" if tls is not None else "http"
    return handle


#: What a real site compresses (Debian's own mod_deflate list, plus JSON, SVG and TTF fonts, as common configurations
#: add): the same list for both servers, so neither variant of a page gets bytes the other does not.
COMPRESSED_TYPES = ("text/html", "text/plain", "text/xml", "text/css", "text/javascript", "application/javascript",
                    "application/x-javascript", "application/json", "application/xml", "application/rss+xml",
                    "image/svg+xml", "font/ttf")


def compression_conf(kind: str) -> str:
    """`extra_conf` for start_nginx / start_apache that makes the server gzip text as a real site does (nginx's
    `gzip` at level 6, Apache's mod_deflate at its default level, both answering `Accept-Encoding: gzip` only)."""
    if kind == "nginx":  # text/html is always in nginx's gzip_types
        types = " ".join(t for t in COMPRESSED_TYPES if t != "text/html")
        return f"gzip on;\ngzip_comp_level 6;\ngzip_vary on;\ngzip_min_length 256;\ngzip_types {types};\n"
    if kind == "apache":
        return (f"LoadModule filter_module {APACHE_MODULES}/mod_filter.so\n"
                f"LoadModule deflate_module {APACHE_MODULES}/mod_deflate.so\n"
                f"AddOutputFilterByType DEFLATE {' '.join(COMPRESSED_TYPES)}\n")
    raise ValueError(f"no server {kind!r} (have: nginx, apache)")


def revalidate_conf(kind: str) -> str:
    """`extra_conf` for start_nginx / start_apache that marks every answer `Cache-Control: no-cache`: a cache may
    store it and must revalidate it before each use (the servers' own ETag and Last-Modified), as every cache does
    once a site's max-age has run out (the real-pages revisit)."""
    if kind == "nginx":
        return "add_header Cache-Control no-cache;\n"
    if kind == "apache":
        return (f"LoadModule headers_module {APACHE_MODULES}/mod_headers.so\n"
                'Header always set Cache-Control "no-cache"\n')
    raise ValueError(f"no server {kind!r} (have: nginx, apache)")


def tls_conf(pki: Path, ip: str, port: int = 443, http2: bool = True) -> str:
    """`extra_conf` for start_nginx: also listen on ip:port with TLS (srv.pem / srv.key of `tls_pki`) and, with
    `http2`, HTTP/2 offered by ALPN beside HTTP/1.1 (nginx 1.22's `listen ... ssl http2`). TLS 1.3 named, as
    start_nginx's `tls` does: nginx 1.22's default stops at TLS 1.2, whose full handshake costs a second round trip
    that a client without False Start (the helper: OpenSSL has none) pays and Chromium does not (until 2026-11-29
    the real-pages h2 runs were TLS 1.2 for that reason: the helper's connections one round trip behind)."""
    return (f"listen {ip}:{port} ssl{' http2' if http2 else ''};\nssl_certificate {pki}/srv.pem;\n"
            f"ssl_certificate_key {pki}/srv.key;\nssl_protocols TLSv1.2 TLSv1.3;\n")


def _workdir(host: Host, kind: str) -> Path:
    work = Path(tempfile.mkdtemp(prefix=f"lf{os.getpid()}-{kind}-"))
    work.chmod(0o755)  # Apache children (www-data) open files below it
    host.lab.defer(lambda: shutil.rmtree(work, ignore_errors=True))
    return work


def _readable_docroot(docroot: Path, work: Path) -> Path:
    """docroot itself if "others" can reach and read all of it, else a world-readable copy."""
    ancestors_ok = all(p.stat().st_mode & stat.S_IXOTH for p in docroot.parents)
    ok = ancestors_ok and _others_can_read(docroot)
    for dirpath, dirnames, filenames in os.walk(docroot) if ok else ():
        ok = all(_others_can_read(Path(dirpath, n)) for n in [*dirnames, *filenames])
        if not ok:
            break
    if ok:
        return docroot
    copy = work / "docroot"
    shutil.copytree(docroot, copy, copy_function=shutil.copyfile)
    for dirpath, _dirnames, filenames in os.walk(copy):  # copytree copies directory modes too
        os.chmod(dirpath, 0o755)
        for n in filenames:
            os.chmod(os.path.join(dirpath, n), 0o644)
    return copy


def _others_can_read(p: Path) -> bool:
    mode = p.stat().st_mode
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & need == need


def _start(host: Host, kind: str, argv: Sequence[str], work: Path, ip: str, port: int) -> ServerHandle:
    with open(work / "output.log", "wb") as out:
        proc = host.popen(argv, stdout=out, stderr=subprocess.STDOUT)
    handle = ServerHandle(kind, host, ip, port, work, proc)
    probe_ip = "127.0.0.1" if ip in ("0.0.0.0", "") else ip
    deadline = time.monotonic() + READY_TIMEOUT
    while True:  # bounded: until the port accepts, the server exits, or the deadline
        if proc.poll() is not None:
            raise RuntimeError(f"{kind} exited with {proc.returncode}:\n{_tail(work)}")
        try:
            host.connect((probe_ip, port), timeout=0.5).close()
            return handle
        except OSError:
            if time.monotonic() > deadline:
                handle.stop()
                raise RuntimeError(f"{kind} did not accept on {ip}:{port}:\n{_tail(work)}") from None
            time.sleep(0.05)


def _tail(work: Path) -> str:
    texts = [(work / n).read_text(errors="replace") for n in ("output.log", "error.log") if (work / n).exists()]
    return "\n".join(texts)[-2000:]
