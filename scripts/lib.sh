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
