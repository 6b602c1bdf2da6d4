"""The real-pages corpus: documentation pages from Debian packages, as their authors ship them (HTML, stylesheets,
scripts, fonts, images), none written in this project.

Each `RealPage` names a package, the folder it installs its HTML under, and one page in it. At run time the
scenario installs the missing packages with apt (the bench runs as root) and `RealPage.write` copies what the page
needs into the server's docroot under `/<name>/` (with the package's modification times), symlinks resolved (Debian
links the Sphinx scripts, jQuery and fonts to shared packages): everything the document and its stylesheets name
(`page_deps.dependency_graph`), plus the non-HTML files at the top of the package's folder and the scripts beside
the page (what a script of the page may fetch: rustdoc's `crates.js`, `sidebar-items.js`). A request for anything
else gets the server's 404, in both variants alike, and the report counts them. Nothing of the packages is committed.

`debian-handbook` and `python3-doc` stay out: they are kept for independent checks (issue 17).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench import page_deps

DOC = Path("/usr/share/doc")


@dataclass(frozen=True)
class RealPage:
    name: str  # short, the docroot folder and the report's label
    package: str  # the Debian package that ships it
    root: str  # the package's HTML folder
    page: str  # the page, a path below root ("/intro/tutorial07.html")
    #: Two other pages of the package beside it (same folder depth, same template): what a reader opened before
    #: (LANEFETCH_BENCH_VISIT=sibling); served under the same `/<name>/`, so their path shape is the page's.
    siblings: tuple[str, ...] = ()

    def sibling_pages(self) -> list[RealPage]:
        return [RealPage(self.name, self.package, self.root, p) for p in self.siblings]

    @property
    def images(self) -> None:
        return None  # a real page's images are what they are: counted, not checked

    @property
    def requests(self) -> int:
        return 1  # the document; what else came before the load event is in the log by then

    @property
    def url_path(self) -> str:
        return f"/{self.name}{self.page}"

    def path(self, warm: bool = False) -> str:
        if warm:
            raise ValueError("real pages have no warm copy")
        return self.url_path

    def read(self, path: str) -> str | None:
        """The text of `path` (below root) as the server would serve it, or None."""
        try:
            return (Path(self.root) / path.lstrip("/")).read_text(errors="replace")
        except (OSError, ValueError):
            return None

    def static_waves(self) -> dict[str, int]:
        """Each path the document and its stylesheets name (below root) → its wave (the document: 1)."""
        return page_deps.waves(page_deps.dependency_graph(self.page, self.read), self.page)

    def files(self) -> list[str]:
        """The paths below root copied into the docroot (see the module's docstring)."""
        root = Path(self.root)
        wanted = set(self.static_waves())
        wanted |= {f"/{p.name}" for p in root.iterdir() if p.is_file() and page_deps.kind_of(p.name) != "html"}
        here = (root / self.page.lstrip("/")).parent
        wanted |= {"/" + str(p.relative_to(root)) for p in here.glob("*.js") if p.is_file()}
        return sorted(p for p in wanted if (root / p.lstrip("/")).is_file())

    def write(self, docroot: Path) -> None:
        for p in self.files():
            dest = docroot / self.name / p.lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            # Follows symlinks (the file, not the link) and keeps the package's modification time: a server's
            # Last-Modified is then years old, as a real site's static files are, not seconds. A run-time mtime gave
            # the browser a heuristic freshness of a fraction of a second (RFC 9111 §4.2.2: 10 % of the age), so
            # a stylesheet the page needed twice was revalidated or not by the millisecond: Firefox over HTTPS + h2
            # asked django-tutorial07's console-tabs.css again (304) and its @import a second time in 4 of 5 ON loads.
            shutil.copy2(Path(self.root) / p.lstrip("/"), dest)
        for dirpath, _dirnames, filenames in os.walk(docroot / self.name):  # world-readable for Apache's children
            os.chmod(dirpath, 0o755)
            for n in filenames:
                os.chmod(os.path.join(dirpath, n), 0o644)


CORPUS = [
    RealPage("apache-rewrite", "apache2-doc", str(DOC / "apache2-doc/manual"), "/en/rewrite/intro.html",
             ("/en/rewrite/flags.html", "/en/rewrite/remapping.html")),
    RealPage("django-tutorial07", "python-django-doc", str(DOC / "python-django-doc/html"), "/intro/tutorial07.html",
             ("/intro/tutorial06.html", "/intro/tutorial05.html")),
    RealPage("flask-tutorial", "python-flask-doc", str(DOC / "python-flask-doc/html"), "/tutorial/index.html",
             ("/tutorial/layout.html", "/tutorial/factory.html")),
    RealPage("cmake-interaction", "cmake-doc", str(DOC / "cmake-doc/html"), "/guide/user-interaction/index.html",
             ("/guide/tutorial/index.html", "/guide/using-dependencies/index.html")),
    RealPage("jinja-templates", "python-jinja2-doc", str(DOC / "python-jinja2-doc/html"), "/templates.html",
             ("/api.html", "/intro.html")),
    RealPage("rust-std", "rust-doc", str(DOC / "rust-doc/html"), "/std/index.html",
             ("/core/index.html", "/alloc/index.html")),
    RealPage("rust-book-print", "rust-doc", str(DOC / "rust-doc/html"), "/book/print.html",  # the whole book
             ("/book/ch01-00-getting-started.html", "/book/ch02-00-guessing-game-tutorial.html")),
]


def install_missing(pages: list[RealPage]) -> None:
    """apt-get install the packages of `pages` that are not installed (root; the bench already is)."""
    missing = sorted({p.package for p in pages if not (Path(p.root) / p.page.lstrip("/")).is_file()})
    if not missing:
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True, env=env)
