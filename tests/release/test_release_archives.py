"""The release archives (scripts/release.sh: build/release/<version>/) installed as their
installers install them, each into a fresh worker, running the core scenario from them:

- the portable plugin archive unpacked into a directory on `plugin.path`;
- the Confluent Hub component archive laid out as `confluent-hub install` lays it out (its
  top directory, holding `lib/`, under the component directory on `plugin.path`);

then the FileStream example connector of the archive's `etc/` (the explicit form), pointed at a
topic and a file of the test's, delivers every record once. Also checked: the sums, the Hub
manifest's fields, the notices, and that the jar carries every platform's native library.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import pytest

from harness.cluster import REPO_ROOT, Cluster
from helpers import (count_figures, delete_connector, file_lines, produce_values,
                     record_figures, start_connector, stop_worker_if_running, uniq, wait_for)

VERSION = re.search(r'^version = "(.+)"', (REPO_ROOT / "Cargo.toml").read_text(), re.M).group(1)
RELEASE = REPO_ROOT / "build" / "release" / VERSION
PORTABLE = RELEASE / f"sharesink-{VERSION}-plugin.zip"
HUB = RELEASE / f"sharesink-sharesink-connect-{VERSION}.zip"
NATIVES = {f"native/{p}/libsharesink_jni.so"
           for p in ("linux-x86_64", "linux-aarch_64", "linux-x86_64-musl", "linux-aarch_64-musl")}
N = 1000
WORKER = 0


@pytest.fixture(scope="module")
def release():
    if not (PORTABLE.is_file() and HUB.is_file()):
        pytest.fail(f"no release in {RELEASE}: run scripts/release.sh {VERSION} first",
                    pytrace=False)
    return RELEASE


def _jar_natives(archive: Path) -> set:
    with zipfile.ZipFile(archive) as zf:
        jar = next(n for n in zf.namelist() if n.endswith(".jar"))
        with zipfile.ZipFile(io.BytesIO(zf.read(jar))) as j:
            return {n for n in j.namelist() if n.startswith("native/") and n.endswith(".so")}


def test_sums_manifest_notices_and_natives(release):
    sums = dict(reversed(line.split("  ", 1)) for line in
                (release / "SHA256SUMS").read_text().splitlines())
    for archive in (PORTABLE, HUB):
        assert sums[archive.name] == hashlib.sha256(archive.read_bytes()).hexdigest(), archive
        assert _jar_natives(archive) == NATIVES, archive
    top = f"sharesink-sharesink-connect-{VERSION}/"
    with zipfile.ZipFile(HUB) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read(top + "manifest.json"))
    for d in ("lib/", "doc/", "etc/", "assets/"):
        assert any(n.startswith(top + d) for n in names), d
    assert manifest["name"] == "sharesink-connect" and manifest["version"] == VERSION
    assert manifest["owner"]["username"] == "sharesink"
    assert manifest["component_types"] == ["sink"]
    assert manifest["license"][0]["name"] == "Apache License 2.0"
    assert top + manifest["logo"] in names
    for key in ("title", "description", "requirements", "features", "tags", "support",
                "release_date"):
        assert manifest.get(key), key
    notices = (release / "THIRD-PARTY-NOTICES.md").read_text()
    for crate in ("tokio", "rustls", "kafka-protocol", "mimalloc", "zstd-sys"):
        assert f"| {crate} |" in notices, crate
    with zipfile.ZipFile(PORTABLE) as zf:
        assert {f"sharesink-{VERSION}/LICENSE",
                f"sharesink-{VERSION}/THIRD-PARTY-NOTICES.md"} <= set(zf.namelist())


def test_sha512_sums_for_strimzi(release):
    sums = dict(reversed(line.split("  ", 1)) for line in
                (release / "SHA512SUMS").read_text().splitlines())
    for archive in (PORTABLE, HUB):
        assert sums[archive.name] == hashlib.sha512(archive.read_bytes()).hexdigest(), archive


def test_both_archives_carry_ops_and_the_docs(release):
    ops = sorted(p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "ops").rglob("*")
                 if p.is_file())
    assert "ops/prometheus/sharesink-alerts.yaml" in ops and \
        "ops/prometheus/sharesink-prometheusrule.yaml" in ops, ops
    docs = ["operations.md", "configuration.md", "security.md", "architecture.md", "README.md"]
    with zipfile.ZipFile(PORTABLE) as zf:
        names = set(zf.namelist())
        top = f"sharesink-{VERSION}/"
        missing = [n for n in [top + o for o in ops] + [top + "docs/" + d for d in docs]
                   if n not in names]
        assert not missing, f"the portable archive lacks {missing}"
        assert zf.read(top + "ops/prometheus/sharesink-alerts.yaml") == \
            (REPO_ROOT / "ops/prometheus/sharesink-alerts.yaml").read_bytes()
    with zipfile.ZipFile(HUB) as zf:
        names = set(zf.namelist())
        top = f"sharesink-sharesink-connect-{VERSION}/"
        missing = [n for n in [top + "etc/" + o for o in ops] + [top + "doc/" + d for d in docs]
                   if n not in names]
        assert not missing, f"the Hub archive lacks {missing}"


@pytest.mark.parametrize("archive", ["portable", "hub"])
def test_installed_archive_runs_the_example_connector(cluster: Cluster, release, archive: str):
    path = PORTABLE if archive == "portable" else HUB
    with zipfile.ZipFile(HUB) as zf:
        example = json.loads(zf.read(f"sharesink-sharesink-connect-{VERSION}/etc/filestream-share-sink.json"))
    name = uniq(f"release-{archive}-")
    out = cluster.state_dir / f"{name}.out"
    cluster.create_topic(name, partitions=3)
    values = [f"{name}-v{i:05d}" for i in range(N)]
    produce_values(cluster, name, values)
    cfg = dict(example["config"], name=name, topics=name, file=str(out), **{"tasks.max": "4"})
    stop_worker_if_running(cluster, WORKER)
    try:
        # The harness unpacks the archive into plugin.path/sharesink/: the portable archive's
        # top directory, or the Hub archive's component directory with lib/ inside.
        cluster.start_worker(WORKER, plugin_archive=path)
        rest = cluster.rest(WORKER)
        start_connector(rest, name, cfg, tasks=4)
        wait_for(f"every record through the {archive} archive",
                 lambda: len(set(file_lines(out))) >= N, timeout=120)
        figs = count_figures(values, file_lines(out))
        record_figures(f"release-{archive}-archive", **figs)
        assert figs["lost"] == 0 and figs["unexpected"] == 0, figs
        delete_connector(rest, name)
    finally:
        stop_worker_if_running(cluster, WORKER)
