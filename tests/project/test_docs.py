"""The documentation holds together: the site builds strictly and the README's links all land.

The strict build fails on a link to a missing page or anchor and on a page left out of the nav;
the two failing builds below prove that the configuration really turns those into failures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RESULTS = ROOT / "bench" / "results.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def build_site(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict`, as `make docs` runs it, with the site written to `site`."""
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)]
    return subprocess.run(command, cwd=config.parent, env=environment, capture_output=True, text=True, timeout=120)


def nav_pages(config: Path) -> list[str]:
    """Every page the nav of mkdocs.yml lists (the file's `!relative` tag read as plain text)."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!relative", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]
    nav = yaml.load(config.read_text(), Loader=Loader)["nav"]
    return [page for entry in nav for page in entry.values()]


def heading_slugs(markdown: str) -> set[str]:
    """The anchors GitHub (and mkdocs' toc) give the headings of a Markdown text."""
    slugs = set()
    for line in FENCE.sub("", markdown).splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            slugs.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return slugs


def relative_links(markdown: str) -> list[str]:
    """Link and image targets outside code, other than web addresses."""
    text = CODE_SPAN.sub("", FENCE.sub("", markdown))
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_the_site_builds_strictly_with_every_page_and_the_bench_figures(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = build_site(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, built.stdout + built.stderr
    pages = nav_pages(ROOT / "mkdocs.yml")
    assert sorted(pages) == sorted(path.name for path in (ROOT / "docs").glob("*.md"))
    for page in pages:
        html = (site / page.replace(".md", ".html")).read_text()
        assert "--8&lt;--" not in html, f"{page}: an include was left unexpanded"
        for cell in re.findall(r"<td[^>]*>.*?</td>", html, re.DOTALL):
            assert "\\|" not in cell, f"{page}: a table cell shows an escaped pipe: {cell}"
    assert (site / "inbox.png").read_bytes() == (ROOT / "docs" / "inbox.png").read_bytes()
    home = (site / "index.html").read_text()
    assert "make run" in home and "make test" in home and "Walk-through" in home
    benchmarks = (site / "benchmarks.html").read_text()
    sections = re.findall(r"^## (.+)$", RESULTS.read_text(), re.MULTILINE)
    assert sections, "bench/results.md has no sections"
    shown = re.sub(r"</?code>", "", benchmarks)
    for section in sections:
        heading = section.replace("`", "").replace("&", "&amp;")
        assert heading in shown, f"bench/results.md section {section!r} missing"


@pytest.mark.parametrize(
    ("page", "text", "complaint"),
    [
        ("orphan.md", "# Not in the nav\n", "orphan.md"),
        ("index.md", "\n[gone](guarantees.md#no-such-heading)\n", "no-such-heading"),
        ("index.md", "\n[gone](no-such-page.md)\n", "no-such-page.md"),
    ],
)
def test_a_broken_link_or_a_page_outside_the_nav_fails_the_build(
    tmp_path: Path, page: str, text: str, complaint: str
) -> None:
    for part in ("docs", "bench"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("mkdocs.yml", "README.md"):
        shutil.copy(ROOT / part, tmp_path / part)
    target = tmp_path / "docs" / page
    target.write_text((target.read_text() if target.exists() else "") + text)
    built = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert complaint in built.stdout + built.stderr


def test_every_relative_link_in_the_readme_points_at_a_file_that_exists() -> None:
    readme = README.read_text()
    links = relative_links(readme)
    assert len(links) >= 10, links
    for link in links:
        path, _, anchor = link.partition("#")
        target = (README.parent / path) if path else README
        assert target.is_file(), f"README.md links to {link}, which does not exist"
        if anchor:
            assert target.suffix == ".md", link
            assert anchor in heading_slugs(target.read_text()), f"README.md links to {link}: no such heading"


def test_the_readme_is_a_front_page_with_the_two_commands() -> None:
    readme = README.read_text()
    assert len(readme.splitlines()) <= 400
    assert "make run" in readme and "make test" in readme
