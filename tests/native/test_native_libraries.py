"""The plugin jar carries the native library for every worker image (issue 14): linux x86_64 and
aarch64 against glibc 2.17, and musl (Alpine) on both. Each library is read with readelf:
its machine type matches its directory, a glibc one needs no symbol version newer than 2.17, a
musl one needs musl's libc and no glibc at all.

    python3 -m pytest -q tests/native     # after `mvn -Dnative.all package` (scripts/test.sh)

SHARESINK_PLUGIN_JAR names the jar (default: java/target/sharesink-<version>.jar).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
GLIBC_BASELINE = (2, 17)
EXPECTED = {
    "linux-x86_64": ("Advanced Micro Devices X86-64", "glibc"),
    "linux-aarch_64": ("AArch64", "glibc"),
    "linux-x86_64-musl": ("Advanced Micro Devices X86-64", "musl"),
    "linux-aarch_64-musl": ("AArch64", "musl"),
}
FIGURES: dict = {}


def _jar() -> Path:
    env = os.environ.get("SHARESINK_PLUGIN_JAR")
    if env:
        return Path(env)
    jars = [p for p in glob.glob(str(REPO / "java" / "target" / "sharesink-*.jar"))
            if not p.endswith(("-sources.jar", "-tests.jar"))]
    if not jars:
        pytest.fail("no java/target/sharesink-*.jar: build it with `mvn -Dnative.all package`",
                    pytrace=False)
    return Path(max(jars, key=os.path.getmtime))


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    if not shutil.which("readelf"):
        pytest.fail("readelf is missing (binutils; scripts/lib.sh installs it)", pytrace=False)
    out = tmp_path_factory.mktemp("native")
    found = {}
    with zipfile.ZipFile(_jar()) as jar:
        for name in jar.namelist():
            m = re.fullmatch(r"native/([^/]+)/libsharesink_jni\.so", name)
            if m:
                target = out / m.group(1) / "libsharesink_jni.so"
                target.parent.mkdir(parents=True)
                target.write_bytes(jar.read(name))
                found[m.group(1)] = target
    return found


def _readelf(flag: str, path: Path) -> str:
    return subprocess.run(["readelf", flag, "-W", str(path)], check=True, text=True,
                          stdout=subprocess.PIPE).stdout


def test_the_jar_carries_every_platform(libraries):
    assert sorted(libraries) == sorted(EXPECTED), f"platforms in the jar: {sorted(libraries)}"


@pytest.mark.parametrize("platform", sorted(EXPECTED))
def test_machine_type_and_libc_of_each_library(libraries, platform):
    path = libraries[platform]
    machine, libc = EXPECTED[platform]
    header = _readelf("-h", path)
    got = re.search(r"Machine:\s+(.*)", header).group(1).strip()
    assert got == machine, f"{platform}: machine {got}"
    assert re.search(r"Type:\s+DYN", header), f"{platform} is not a shared object"
    stack = re.search(r"GNU_STACK\s+(?:\S+\s+){5}(\S+)", _readelf("-l", path))
    assert stack and "E" not in stack.group(1), \
        f"{platform} asks for an executable stack (newer glibc refuses to dlopen it)"
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _readelf("-d", path))
    versions = sorted({tuple(int(x) for x in v.split("."))
                       for v in re.findall(r"GLIBC_(\d+(?:\.\d+)+)", _readelf("-V", path))})
    FIGURES[platform] = {"machine": got, "needed": needed,
                         "glibc_versions": [".".join(map(str, v)) for v in versions]}
    print(f"\n{platform}: {got}; NEEDED {needed}; GLIBC versions "
          f"{FIGURES[platform]['glibc_versions']}")
    if libc == "glibc":
        assert "libc.so.6" in needed, needed
        assert versions, f"{platform}: no glibc symbol versions at all"
        assert max(versions) <= GLIBC_BASELINE, \
            f"{platform} needs GLIBC_{'.'.join(map(str, max(versions)))} (baseline 2.17)"
    else:
        assert not versions, f"{platform} (musl) needs glibc versions {versions}"
        assert any("musl" in n or n == "libc.so" for n in needed), \
            f"{platform}: links no musl libc: {needed}"
