"""The documents inside the release archives (scripts/release_archives.py): every relative link of
a shipped document points at a file the same archive carries, in both layouts, and the
changelog ships."""

from __future__ import annotations

import importlib.util
import posixpath
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("release_archives",
                                               ROOT / "scripts" / "release_archives.py")
release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release)

LAYOUTS = {"portable": release.portable_place, "hub": release.hub_place}


def shipped(place):
    """Archive path -> text of every document and ops file the layout carries."""
    out = {}
    for doc in release.DOCS:
        if doc != "LICENSE" or place is release.hub_place:
            out[place(doc)] = release.shipped_doc(doc, place).decode()
    for f in release.ops_files():
        out[place(f.relative_to(ROOT).as_posix())] = ""
    return out


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_relative_link_of_a_shipped_document_resolves_inside_the_archive(layout):
    files = shipped(LAYOUTS[layout])
    checked = 0
    for where, text in files.items():
        for _, _, target in release.MARKDOWN_LINK.findall(text):
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                continue
            path = posixpath.normpath(posixpath.join(posixpath.dirname(where),
                                                     target.partition("#")[0]))
            assert path in files, f"{layout}: {where} links {target} -> {path}, not shipped"
            checked += 1
    assert checked >= 10, checked


def test_links_follow_the_layout_and_unshipped_targets_become_text():
    text = "[conf](docs/configuration.md#order) [bench](bench/README.md) [web](https://x.y/z)"
    assert release.relink(text, "README.md", release.portable_place) == (
        "[conf](configuration.md#order) bench (`bench/README.md` in sharesink's source "
        "repository) [web](https://x.y/z)")
    assert release.relink("[strimzi](../ops/strimzi/sharesink-connect.yaml)",
                          "docs/operations.md", release.hub_place) == \
        "[strimzi](../etc/ops/strimzi/sharesink-connect.yaml)"


def test_the_changelog_ships_in_both_archives():
    for place in LAYOUTS.values():
        assert place("CHANGELOG.md") is not None
