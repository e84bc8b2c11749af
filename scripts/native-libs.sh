#!/usr/bin/env bash
# Builds the JNI library for every worker image sharesink ships for, with cargo-zigbuild (zig as
# the linker, from PyPI's ziglang), and stages them as the jar lays them out:
#   rust/target/native-stage/native/linux-x86_64/        glibc >= 2.17, x86_64
#   rust/target/native-stage/native/linux-aarch_64/      glibc >= 2.17, aarch64
#   rust/target/native-stage/native/linux-x86_64-musl/   musl (Alpine), x86_64
#   rust/target/native-stage/native/linux-aarch_64-musl/ musl (Alpine), aarch64
# `mvn -Dnative.all package` runs this and packs the stage (NativeLoader picks by os.arch and
# the JVM's libc). tests/native/test_native_libraries.py checks each library's machine type
# and the glibc symbol versions it needs; tests/native/test_native_loading.py loads each one under
# its own platform's loader (aarch64 under qemu-user, musl through musl's loader).
source "$(dirname "$0")/lib.sh"
ensure_cross_toolchain
profile="${NATIVE_PROFILE:-release}"
stage="$ROOT/rust/target/native-stage/native"
declare -A platforms=(
  [x86_64-unknown-linux-gnu.2.17]=linux-x86_64
  [aarch64-unknown-linux-gnu.2.17]=linux-aarch_64
  [x86_64-unknown-linux-musl]=linux-x86_64-musl
  [aarch64-unknown-linux-musl]=linux-aarch_64-musl
)

# The four libraries of one source tree and toolchain, kept by content: a fresh clone rebuilds
# every workspace crate four times in release (cargo's fingerprints follow file times), several
# minutes of CI on every run whose Rust did not change. The key hashes the committed blobs of
# everything the build reads and the toolchain's versions; a tree with changes not committed
# there, or SHARESINK_NATIVE_CACHE=off (scripts/release.sh), builds and stores nothing. Only a
# cache: what is taken is checked against its SHA-256 sums, and tests/native checks every
# library shipped whichever way it came.
native_cache_key() {
  local paths=(rust/engine rust/jni Cargo.toml Cargo.lock .cargo/config.toml scripts/native-libs.sh)
  [[ "${SHARESINK_NATIVE_CACHE:-on}" != off ]] || return 1
  git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || return 1
  git -C "$ROOT" diff --quiet HEAD -- "${paths[@]}" 2>/dev/null || return 1
  [[ -z "$(git -C "$ROOT" ls-files --others --exclude-standard -- "${paths[@]}")" ]] || return 1
  {
    git -C "$ROOT" ls-files -s -- "${paths[@]}"
    rustc -Vv
    cargo-zigbuild --version
    python3 -c 'import importlib.metadata as m; print("ziglang", m.version("ziglang"))'
    echo "profile $profile"
  } | sha256sum | cut -c1-32
}

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/sharesink/native-libs"
key="$(native_cache_key || true)"
if [[ -n "$key" && -f "$cache_root/$key/SHA256SUMS" ]] &&
  (cd "$cache_root/$key" && sha256sum --quiet -c SHA256SUMS); then
  log "native libraries: ${!platforms[*]} (cached for these sources and toolchain: $cache_root/$key)"
  rm -rf "$stage"
  mkdir -p "$stage"
  cp -r "$cache_root/$key/." "$stage/"
  rm -f "$stage/SHA256SUMS"
  find "$stage" -name '*.so' | sort
  exit 0
fi

targets=()
for t in "${!platforms[@]}"; do targets+=(--target "$t"); done
log "native libraries: ${!platforms[*]}"
cargo zigbuild --profile "$profile" -p sharesink-jni "${targets[@]}"
dir="$profile"; [[ "$profile" == dev ]] && dir=debug
rm -rf "$stage"
for t in "${!platforms[@]}"; do
  mkdir -p "$stage/${platforms[$t]}"
  cp "$ROOT/rust/target/${t%.2.17}/$dir/libsharesink_jni.so" "$stage/${platforms[$t]}/"
done
find "$stage" -name '*.so' | sort

if [[ -n "$key" ]]; then
  # Stored whole or not at all (a directory renamed into place), the three newest kept.
  mkdir -p "$cache_root"
  tmp="$(mktemp -d "$cache_root/.new.XXXXXX")"
  cp -r "$stage/." "$tmp/"
  (cd "$tmp" && find . -name '*.so' -print0 | sort -z | xargs -0 sha256sum >SHA256SUMS)
  rm -rf "${cache_root:?}/$key"
  mv "$tmp" "$cache_root/$key"
  ls -1td "$cache_root"/*/ 2>/dev/null | tail -n +4 | xargs -r rm -rf
fi
