#!/usr/bin/env bash
# Builds sharesink's release for VERSION into build/release/VERSION/:
#   sharesink-VERSION-plugin.zip              the portable plugin archive: one directory to unpack
#                                             into a worker's plugin.path; the jar carries the
#                                             native library for linux x86_64 and aarch64, glibc
#                                             2.17+ and musl
#   sharesink-sharesink-connect-VERSION.zip   the same as a Confluent Hub component archive
#                                             (manifest.json, lib/, doc/, etc/, assets/), for
#                                             `confluent-hub install <file>`
#   SHA256SUMS, SHA512SUMS (Strimzi's sha512sum),
#   THIRD-PARTY-NOTICES.md                    sums of both, and the license notices of every
#                                             bundled dependency (also inside both archives,
#                                             with the docs and ops/)
#
#   scripts/release.sh VERSION [--home-url URL] [--no-build]
#
# VERSION must be the tree's version (Cargo.toml [workspace.package] and pom.xml agree, the
# Maven build checks it). --no-build takes java/target's plugin archive as it is (scripts/test.sh
# uses it after its own `mvn verify -Dnative.all`); it must carry all four native libraries.
source "$(dirname "$0")/lib.sh"
version="${1:?usage: scripts/release.sh VERSION [--home-url URL] [--no-build]}"
shift
build=1
extra=()
while (($#)); do
  case "$1" in
    --no-build) build=0 ;;
    --home-url) extra+=(--home-url "${2:?--home-url needs a URL}"); shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
tree_version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
if [[ "$version" != "$tree_version" ]]; then
  echo "the tree is at version $tree_version, not $version: set [workspace.package] version in" \
    "Cargo.toml and <version> in pom.xml first" >&2
  exit 1
fi
ensure_prerequisites
if ((build)); then
  log "Plugin archive with every platform's native library (mvn -Dnative.all package)"
  # built from these sources, never taken from scripts/native-libs.sh's cache
  SHARESINK_NATIVE_CACHE=off mvn -B -q -Dnative.all -DskipTests package
fi
zip="java/target/sharesink-$version-plugin.zip"
[[ -f "$zip" ]] || { echo "no $zip: run without --no-build" >&2; exit 1; }
out="build/release/$version"
rm -rf "$out"
log "Release archives into $out"
python3 scripts/release_archives.py --version "$version" --plugin-zip "$zip" --out "$out" "${extra[@]}"
(cd "$out" && sha256sum -c SHA256SUMS && sha512sum -c SHA512SUMS)
