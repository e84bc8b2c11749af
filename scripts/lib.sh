# Shared helpers for the project's scripts. Sourced, not run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
cd "$ROOT"

log() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# Installs what the scripts need and a fresh machine may lack. Every install step lives here.
ensure_prerequisites() {
  local missing=()
  command -v java >/dev/null || missing+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null || missing+=(maven)
  command -v python3 >/dev/null || missing+=(python3)
  command -v unzip >/dev/null || missing+=(unzip)
  command -v cc >/dev/null || missing+=(gcc)
  command -v openssl >/dev/null || missing+=(openssl)  # the harness makes its test CA with it
  if ((${#missing[@]})); then
    log "installing ${missing[*]} from Debian's packages"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
  if ! command -v cargo >/dev/null; then
    echo "cargo (Rust stable) is required; install it with rustup" >&2
    exit 1
  fi
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt
  python3 -c 'import pytest' 2>/dev/null || python3 -m pip install -q pytest
  # pytest-xdist at the version tests/requirements.txt pins (the e2e stage's lanes)
  local xdist_pin
  xdist_pin="$(sed -n 's/^pytest-xdist==\([^ ]*\).*/\1/p' tests/requirements.txt)"
  [[ "$(python3 -c 'import xdist; print(xdist.__version__)' 2>/dev/null)" == "$xdist_pin" ]] ||
    python3 -m pip install -q "pytest-xdist==$xdist_pin"
  python3 -c 'import yaml' 2>/dev/null || python3 -m pip install -q pyyaml
  ensure_prometheus
  # ruff at the version tests/requirements.txt pins: another version may report other findings.
  local ruff_pin
  ruff_pin="$(sed -n 's/^ruff==\([^ ]*\).*/\1/p' tests/requirements.txt)"
  [[ "$(python3 -m ruff --version 2>/dev/null)" == "ruff $ruff_pin" ]] ||
    python3 -m pip install -q "ruff==$ruff_pin"
  link_cargo_cache
}

# cargo's target dir (rust/target, .cargo/config.toml) as a link to one directory per user, so that
# a fresh clone on a machine that built sharesink before reuses the compiled dependencies instead
# of building every crate again (most of a clean CI run's first half). Only a cache: when the
# directory is new or emptied the build is complete, just slower. SHARESINK_CARGO_CACHE=off keeps
# rust/target inside the checkout; a rust/target that exists already is left as it is.
link_cargo_cache() {
  local cache="${SHARESINK_CARGO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sharesink/cargo-target}"
  if [[ "$cache" != off && ! -e "$ROOT/rust/target" && ! -L "$ROOT/rust/target" ]] &&
    mkdir -p "$cache" 2>/dev/null && [[ -w "$cache" ]]; then
    ln -s "$cache" "$ROOT/rust/target"
  fi
  # cargo records build scripts' output paths (native link-search dirs) as it saw them: give it the
  # link's real path, the same from every checkout, so a reused artifact never points into another.
  if [[ -L "$ROOT/rust/target" ]]; then
    CARGO_TARGET_DIR="$(readlink -f "$ROOT/rust/target")"
    export CARGO_TARGET_DIR
    claim_cargo_cache
  fi
}

# cargo judges the workspace's own crates fresh by their sources' times, and a target dir is
# relocatable: artifacts another checkout built are taken as this one's when its sources are
# older (an engine test binary then ran another checkout's tests/java files, and could run its
# code). When the cache was last built from another checkout, this one's Rust sources are
# touched, so the workspace's crates (never the dependencies) are built again from them.
claim_cargo_cache() {
  local marker="$CARGO_TARGET_DIR/.sharesink-checkout"
  if [[ "$(cat "$marker" 2>/dev/null)" != "$ROOT" ]]; then
    git -C "$ROOT" ls-files -z -- rust Cargo.toml Cargo.lock .cargo 2>/dev/null |
      (cd "$ROOT" && xargs -0 -r touch --no-create)
    printf '%s\n' "$ROOT" >"$marker"
  fi
}

# The cross toolchain of scripts/native-libs.sh: Rust's standard libraries for the other worker
# platforms (rustup), zig as the linker with an old glibc baseline (PyPI's ziglang) and
# cargo-zigbuild (PyPI's wheel of the crate's binary).
ensure_cross_toolchain() {
  local installed
  installed="$(rustup target list --installed)"
  for t in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
    grep -qx "$t" <<<"$installed" || rustup target add "$t"
  done
  python3 -c 'import ziglang' 2>/dev/null || python3 -m pip install -q ziglang
  command -v cargo-zigbuild >/dev/null || python3 -m pip install -q cargo-zigbuild
  command -v readelf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binutils; }
}

# Debian's prometheus package: promtool for the rules' unit test (tests/ops) and the server the
# alert test starts on 127.0.0.1 (tests/e2e/test_share_27_alerts.py). The package's own service is
# kept from starting while it installs (a policy-rc.d that refuses, when the machine has none): a
# Prometheus on every interface is no part of a test.
ensure_prometheus() {
  command -v prometheus >/dev/null && command -v promtool >/dev/null && return 0
  local policy=/usr/sbin/policy-rc.d added=0
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
  fi
  log "installing prometheus (promtool and the server) from Debian's packages"
  local rc=0
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; } || rc=$?
  ((added)) && rm -f "$policy"
  return $rc
}

# What tests/native/test_native_loading.py runs each native library with, from Debian's packages:
# qemu-user (aarch64 binaries on an x86_64 machine), musl's x86_64 loader, and through dpkg's
# multiarch the aarch64 glibc and musl loaders (libc6:arm64, musl:arm64) that qemu runs.
ensure_native_loaders() {
  local missing=()
  command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
  [[ -e /lib/ld-musl-x86_64.so.1 ]] || missing+=(musl)
  [[ -e /lib/ld-linux-aarch64.so.1 ]] || missing+=(libc6:arm64)
  [[ -e /lib/ld-musl-aarch64.so.1 ]] || missing+=(musl:arm64)
  ((${#missing[@]})) || return 0
  log "installing ${missing[*]} from Debian's packages (native library loading test)"
  if [[ " ${missing[*]} " == *":arm64 "* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
