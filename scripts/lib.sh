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
