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
