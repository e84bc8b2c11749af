"""Each native library of the plugin jar loaded on its own platform (issue 41): a loader built
for that platform (tests/native/dlopen_loader.c, compiled with zig from PyPI's ziglang, the
cross linker of scripts/native-libs.sh) dlopens it with every symbol bound at once and looks up
JNI_OnLoad and every Java_* entry point the library exports, under that platform's own libc and
dynamic loader:

- linux-x86_64: glibc's loader of this machine (the library's glibc symbol versions are checked
  against the 2.17 baseline by test_native_libraries.py: no glibc that old is packaged);
- linux-x86_64-musl: musl's own loader (/lib/ld-musl-x86_64.so.1, Debian's musl);
- linux-aarch_64, linux-aarch_64-musl: aarch64 glibc's and musl's loaders (Debian's libc6:arm64
  and musl:arm64 through multiarch) under qemu-user.

A library that does not load, or lacks an entry point, fails the test. What is missing is
installed first (scripts/lib.sh ensure_native_loaders). As a check of the check, a glibc library
handed to musl's loader must fail to load.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_native_libraries import EXPECTED, REPO, libraries  # noqa: F401  (the fixture)

LOADER_SOURCE = Path(__file__).with_name("dlopen_loader.c")
PLATFORMS = {
    # jar directory: (zig target, command prefix to run the loader)
    "linux-x86_64": ("x86_64-linux-gnu.2.17", []),
    "linux-x86_64-musl": ("x86_64-linux-musl", []),
    "linux-aarch_64": ("aarch64-linux-gnu.2.17", ["qemu-aarch64", "-L", "/"]),
    "linux-aarch_64-musl": ("aarch64-linux-musl", ["qemu-aarch64", "-L", "/"]),
}
INTERPRETERS = {
    "linux-x86_64": "/lib64/ld-linux-x86-64.so.2",
    "linux-x86_64-musl": "/lib/ld-musl-x86_64.so.1",
    "linux-aarch_64": "/lib/ld-linux-aarch64.so.1",
    "linux-aarch_64-musl": "/lib/ld-musl-aarch64.so.1",
}


def _ensure_loaders() -> None:
    if shutil.which("qemu-aarch64") and all(Path(p).exists() for p in INTERPRETERS.values()):
        return
    subprocess.run(["bash", "-c", "source scripts/lib.sh && ensure_native_loaders"], cwd=REPO,
                   check=True)


def _zig() -> list:
    try:
        import ziglang  # noqa: F401
    except ImportError:
        subprocess.run(["python3", "-m", "pip", "install", "-q", "ziglang"], check=True)
    return ["python3", "-m", "ziglang"]


@pytest.fixture(scope="module")
def loaders(tmp_path_factory):
    _ensure_loaders()
    out = tmp_path_factory.mktemp("loaders")
    built = {}
    for platform, (target, _) in PLATFORMS.items():
        exe = out / f"dlopen-{platform}"
        # -dynamic: a musl executable is static by default, and a static one cannot dlopen.
        subprocess.run([*_zig(), "cc", "-target", target, "-O1", "-dynamic", "-o", str(exe),
                        str(LOADER_SOURCE), "-ldl"], check=True, capture_output=True, text=True)
        built[platform] = exe
    return built


def _entry_points(path: Path) -> list:
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", str(path)], check=True, text=True,
                          stdout=subprocess.PIPE).stdout
    names = []
    for line in syms.splitlines():
        f = line.split()
        if len(f) >= 8 and f[4] == "GLOBAL" and f[6] != "UND" and \
                (f[7].startswith("Java_") or f[7] == "JNI_OnLoad"):
            names.append(f[7])
    return sorted(set(names))


def _run(platform: str, loader: Path, library: Path, symbols: list):
    return subprocess.run([*PLATFORMS[platform][1], str(loader), str(library), *symbols],
                          text=True, capture_output=True, timeout=120)


@pytest.mark.parametrize("platform", sorted(EXPECTED))
def test_each_library_loads_under_its_platforms_own_loader(libraries, loaders, platform):  # noqa: F811
    library = libraries[platform]
    loader = loaders[platform]
    interp = subprocess.run(["readelf", "-l", "-W", str(loader)], check=True, text=True,
                            stdout=subprocess.PIPE).stdout
    assert f"[Requesting program interpreter: {INTERPRETERS[platform]}]" in interp, interp
    symbols = _entry_points(library)
    assert "JNI_OnLoad" in symbols and len(symbols) > 10, symbols
    out = _run(platform, loader, library, symbols)
    print(f"\n{platform}: {out.stdout.strip()} {out.stderr.strip()}")
    assert out.returncode == 0, f"{platform} does not load: {out.stderr}"
    assert re.search(rf"{len(symbols)} symbols resolved", out.stdout), out.stdout


def test_the_loader_fails_a_library_of_another_libc(libraries, loaders):  # noqa: F811
    out = _run("linux-x86_64-musl", loaders["linux-x86_64-musl"], libraries["linux-x86_64"],
               ["JNI_OnLoad"])
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "dlopen" in out.stderr
