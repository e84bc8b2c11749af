#!/usr/bin/env python3
"""Assembles sharesink's release from the plugin archive Maven built (`mvn -Dnative.all
package`): the portable plugin archive with the license and third-party notices added, a
Confluent Hub component archive, and SHA-256 sums. Run by scripts/release.sh, which checks the
version and builds first; standard library only.

    python3 scripts/release_archives.py --version 0.1.0 --plugin-zip java/target/...zip --out DIR
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import posixpath
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent

OWNER = "sharesink"
COMPONENT = "sharesink-connect"

# The platforms the plugin jar carries a native library for (scripts/native-libs.sh), as cargo
# targets (the dependency graph can differ per target) and as the jar's directories.
TARGETS = {
    "x86_64-unknown-linux-gnu": "linux-x86_64",
    "aarch64-unknown-linux-gnu": "linux-aarch_64",
    "x86_64-unknown-linux-musl": "linux-x86_64-musl",
    "aarch64-unknown-linux-musl": "linux-aarch_64-musl",
}

LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|UNLICENSE)", re.IGNORECASE)

# The documents an operator reads, into the Hub archive's doc/.
DOCS = ["README.md", "LICENSE", "CHANGELOG.md", "docs/configuration.md", "docs/security.md",
        "docs/architecture.md", "docs/operations.md"]
EXAMPLES = ROOT / "examples"
LOGO = ROOT / "docs" / "assets" / "sharesink.svg"


# ------------------------------------------------------------------------------------------
# third-party notices


def rust_crates() -> List[dict]:
    """Every crate linked into the JNI library for any shipped target: sharesink-jni's normal
    dependencies, transitively (build and dev dependencies are not shipped)."""
    crates: Dict[str, dict] = {}
    for target in TARGETS:
        meta = json.loads(subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked",
             "--filter-platform", target],
            cwd=ROOT, check=True, capture_output=True, text=True).stdout)
        packages = {p["id"]: p for p in meta["packages"]}
        nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
        root = next(p["id"] for p in meta["packages"] if p["name"] == "sharesink-jni")
        stack, seen = [root], set()
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            for dep in nodes[pid]["deps"]:
                if any(k["kind"] is None for k in dep["dep_kinds"]):
                    stack.append(dep["pkg"])
        for pid in seen:
            p = packages[pid]
            if p["source"] is None:
                continue  # our own crates
            crates[f'{p["name"]} {p["version"]}'] = p
    return [crates[k] for k in sorted(crates)]


def license_texts(crate_dir: Path) -> List[Path]:
    """The crate's license and notice files: at its top, and one level down for crates that
    vendor C code (zstd-sys, lz4-sys, libmimalloc-sys) under their own licenses."""
    found = [p for p in sorted(crate_dir.iterdir()) if p.is_file() and LICENSE_FILE.match(p.name)]
    for sub in sorted(d for d in crate_dir.iterdir() if d.is_dir()):
        found += [p for p in sorted(sub.iterdir()) if p.is_file() and LICENSE_FILE.match(p.name)]
    return found


def bundled_jars(plugin_zip: Path) -> List[str]:
    """Jars in the plugin archive besides sharesink's own (the worker provides Kafka, SLF4J,
    JAX-RS and Jackson; the assembly excludes them)."""
    with zipfile.ZipFile(plugin_zip) as zf:
        return sorted(n for n in zf.namelist()
                      if n.endswith(".jar") and not Path(n).name.startswith("sharesink-connect-"))


def notices(plugin_zip: Path) -> str:
    crates = rust_crates()
    jars = bundled_jars(plugin_zip)
    out = ["# Third-party notices", "",
           "sharesink is licensed under the Apache License 2.0 (LICENSE). Its plugin jar carries a",
           "native library (`native/<platform>/libsharesink_jni.so`, for "
           + ", ".join(sorted(TARGETS.values())) + ") built from",
           f"sharesink's Rust crates and the {len(crates)} third-party crates below; their license",
           "files follow the table.", ""]
    if jars:
        out += ["Java libraries in the plugin archive besides sharesink's own jar:", ""]
        out += [f"- `{j}`" for j in jars]
    else:
        out += ["The plugin archive bundles no Java library besides sharesink's own jar: Kafka,",
                "SLF4J, JAX-RS and Jackson are the worker's."]
    out += ["", "| crate | version | license | source |", "|---|---|---|---|"]
    for c in crates:
        out.append(f'| {c["name"]} | {c["version"]} | {c.get("license") or "see its files"} | '
                   f'{c.get("repository") or ""} |')
    # Identical files (the Apache License text most crates carry) are printed once, under the
    # list of crates that ship them; files that differ (copyright lines) each get their own.
    by_text: Dict[str, List[str]] = {}
    missing = []
    for c in crates:
        crate_dir = Path(c["manifest_path"]).parent
        files = license_texts(crate_dir)
        if not files:
            missing.append(f'{c["name"]} {c["version"]}')
        for f in files:
            text = f.read_text(encoding="utf-8", errors="replace").rstrip()
            by_text.setdefault(text, []).append(
                f'{c["name"]} {c["version"]} ({f.relative_to(crate_dir)})')
    out += ["", "## License files", ""]
    fence = "`" * 3
    for text, owners in sorted(by_text.items(), key=lambda kv: kv[1][0]):
        more = f" and {len(owners) - 1} more" if len(owners) > 1 else ""
        out += [f"### {owners[0]}{more}", ""]
        if len(owners) > 1:
            out += ["The same file, verbatim, in: " + ", ".join(owners[1:]) + ".", ""]
        out += [fence + "text", text.replace(fence, "'" * 3), fence, ""]
    if missing:
        # A crate that ships no license file: its Cargo.toml license expression (in the table)
        # names the license, whose text is among the files above.
        out += ["## Crates without a license file of their own", "",
                "Their license is the expression in the table above: " + ", ".join(missing) + "."]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------
# archives


def plugin_natives(plugin_zip: Path) -> List[str]:
    with zipfile.ZipFile(plugin_zip) as zf:
        jar_name = next(n for n in zf.namelist()
                        if Path(n).name.startswith("sharesink-connect-") and n.endswith(".jar"))
        import io
        with zipfile.ZipFile(io.BytesIO(zf.read(jar_name))) as jar:
            return sorted(n for n in jar.namelist() if n.startswith("native/") and n.endswith(".so"))


# ------------------------------------------------------------------------------------------
# documents inside an archive: their links follow the archive's layout


# A repository path's place in an archive (None: not shipped).
Layout = Callable[[str], Optional[str]]

MARKDOWN_LINK = re.compile(r"(!?)\[([^\]]+)\]\(([^)\s]+)\)")


def portable_place(repo_path: str) -> Optional[str]:
    """Where the portable archive puts a repository file, under its top directory."""
    if repo_path in DOCS and repo_path != "LICENSE":
        return "docs/" + Path(repo_path).name
    if repo_path.startswith("ops/") and (ROOT / repo_path).is_file():
        return repo_path
    return None


def hub_place(repo_path: str) -> Optional[str]:
    """Where the Hub archive puts a repository file, under its top directory."""
    if repo_path in DOCS:
        return "doc/" + Path(repo_path).name
    if repo_path.startswith("ops/") and (ROOT / repo_path).is_file():
        return "etc/" + repo_path
    if repo_path.startswith("examples/") and (ROOT / repo_path).is_file():
        return "etc/" + Path(repo_path).name
    return None


def relink(text: str, source: str, place: Layout) -> str:
    """`text` of the repository file `source` as shipped where `place` puts it: each relative
    link points where `place` puts its target, and a link to a file the archive does not carry
    becomes its label and the path in the source repository."""
    here = posixpath.dirname(place(source) or "")

    def one(m: re.Match) -> str:
        bang, label, target = m.groups()
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        path, _, fragment = target.partition("#")
        repo = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        there = place(repo)
        if there is None:
            return f"{label} (`{repo}` in sharesink's source repository)"
        link = posixpath.relpath(there, here or ".") + ("#" + fragment if fragment else "")
        return f"{bang}[{label}]({link})"

    return MARKDOWN_LINK.sub(one, text)


def shipped_doc(doc: str, place: Layout) -> bytes:
    """A document as an archive of layout `place` carries it."""
    path = ROOT / doc
    if path.suffix != ".md":
        return path.read_bytes()
    return relink(path.read_text(), doc, place).encode()


def ops_files() -> List[Path]:
    """Everything under ops/: exporter and alert rules, dashboard, Strimzi and KEDA examples."""
    return sorted(p for p in (ROOT / "ops").rglob("*") if p.is_file())


def portable_archive(plugin_zip: Path, version: str, notices_text: str, out: Path) -> Path:
    """Maven's plugin archive with LICENSE, THIRD-PARTY-NOTICES.md, the docs (docs/) and ops/
    added to its top directory."""
    target = out / f"sharesink-{version}-plugin.zip"
    top = f"sharesink-{version}/"
    with zipfile.ZipFile(plugin_zip) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename in (top + "LICENSE", top + "THIRD-PARTY-NOTICES.md"):
                continue
            dst.writestr(info, src.read(info.filename))
        dst.writestr(top + "LICENSE", (ROOT / "LICENSE").read_text())
        dst.writestr(top + "THIRD-PARTY-NOTICES.md", notices_text)
        for doc in DOCS:
            if doc != "LICENSE" and (ROOT / doc).is_file():
                dst.writestr(top + portable_place(doc), shipped_doc(doc, portable_place))
        for f in ops_files():
            dst.writestr(top + f.relative_to(ROOT).as_posix(), f.read_bytes())
    return target


def manifest(version: str, home_url: Optional[str], release_date: str) -> dict:
    m = {
        "name": COMPONENT,
        "version": version,
        "title": "sharesink: Kafka Connect sink connectors on share groups",
        "description": (
            "Runs any existing Kafka Connect sink connector, unmodified, on a KIP-932 share group "
            "(Kafka's queues): tasks beyond the partition count, no head-of-line blocking from a "
            "slow task, no pause for a rebalance. The share-group consumer is a Rust engine "
            "reached through JNI, with the worker's own KafkaShareConsumer as a fallback. "
            "Delivery is at-least-once, and share mode gives up order within a partition: see "
            "doc/configuration.md for which sinks are safe as they are."),
        "owner": {"username": OWNER, "type": "organization", "name": "sharesink",
                  "logo": "assets/sharesink.svg"},
        "support": {"summary": "Supported by the sharesink project.", "provider_name": "sharesink",
                    "logo": "assets/sharesink.svg"},
        "tags": ["share groups", "queues", "KIP-932", "sink", "scaling", "at-least-once"],
        "requirements": [
            "Apache Kafka brokers 4.2 or later with share groups enabled (share.version 1; 2 for "
            "the broker's own dead letter queue)",
            "Kafka Connect 4.2 or later",
            "Linux x86_64 or aarch64 workers (glibc 2.17+ or musl) for the native engine; other "
            "workers run the worker's KafkaShareConsumer",
        ],
        "features": {
            "supported_encodings": ["any"],
            "single_message_transforms": True,
            "confluent_control_center_integration": False,
            "kafka_connect_api": True,
            "delivery_guarantee": ["at_least_once"],
        },
        "logo": "assets/sharesink.svg",
        "license": [{"name": "Apache License 2.0",
                     "url": "https://www.apache.org/licenses/LICENSE-2.0"}],
        "component_types": ["sink"],
        "release_date": release_date,
    }
    if home_url:
        m["owner"]["url"] = home_url
        m["support"]["url"] = home_url
        m["documentation_url"] = home_url
        m["source_url"] = home_url
    return m


def hub_archive(plugin_zip: Path, version: str, notices_text: str, out: Path,
                home_url: Optional[str], release_date: str) -> Path:
    """`<owner>-<name>-<version>.zip`: one top directory with manifest.json, lib/ (the jars),
    doc/, etc/ (example connector and worker configs, and ops/ as etc/ops/), assets/ (the
    logo)."""
    top = f"{OWNER}-{COMPONENT}-{version}/"
    target = out / f"{OWNER}-{COMPONENT}-{version}.zip"
    with zipfile.ZipFile(plugin_zip) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        dst.writestr(top + "manifest.json",
                     json.dumps(manifest(version, home_url, release_date), indent=2) + "\n")
        for name in src.namelist():
            if name.endswith(".jar"):
                dst.writestr(top + "lib/" + Path(name).name, src.read(name))
        for doc in DOCS:
            if (ROOT / doc).is_file():
                dst.writestr(top + hub_place(doc), shipped_doc(doc, hub_place))
        dst.writestr(top + "doc/THIRD-PARTY-NOTICES.md", notices_text)
        for example in sorted(EXAMPLES.iterdir()):
            dst.writestr(top + "etc/" + example.name, example.read_bytes())
        for f in ops_files():
            dst.writestr(top + "etc/" + f.relative_to(ROOT).as_posix(), f.read_bytes())
        dst.writestr(top + "assets/" + LOGO.name, LOGO.read_bytes())
    return target


def sums(files: List[Path], out: Path, algorithm: str) -> Path:
    """`<ALGORITHM>SUMS` as sha256sum/sha512sum write them (SHA-512: what Strimzi checks)."""
    lines = [f"{hashlib.new(algorithm, f.read_bytes()).hexdigest()}  {f.name}" for f in files]
    target = out / f"{algorithm.upper()}SUMS"
    target.write_text("\n".join(lines) + "\n")
    return target


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", required=True)
    ap.add_argument("--plugin-zip", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--home-url", help="the project's home page, for the Hub manifest's URLs")
    ap.add_argument("--release-date", default=datetime.date.today().isoformat())
    args = ap.parse_args(argv)

    natives = plugin_natives(args.plugin_zip)
    expected = sorted(f"native/{d}/libsharesink_jni.so" for d in TARGETS.values())
    if natives != expected:
        print(f"the plugin jar carries {natives}, a release needs {expected}: build with "
              "`mvn -Dnative.all package`", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    text = notices(args.plugin_zip)
    (args.out / "THIRD-PARTY-NOTICES.md").write_text(text)
    portable = portable_archive(args.plugin_zip, args.version, text, args.out)
    hub = hub_archive(args.plugin_zip, args.version, text, args.out, args.home_url,
                      args.release_date)
    sha256 = sums([portable, hub], args.out, "sha256")
    sha512 = sums([portable, hub], args.out, "sha512")
    for f in (portable, hub, sha256, sha512, args.out / "THIRD-PARTY-NOTICES.md"):
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
