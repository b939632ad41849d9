#!/usr/bin/env bash
# Builds Filebeat (the OSS build, libbeat's elasticsearch output) from the beats Go module on the
# Go module proxy. `go install` refuses modules with replace directives, so the module source is
# downloaded with `go mod download`, copied to a writable directory and built there (its go.mod,
# replace directives included, then applies). Idempotent. Output:
#   ${LOOKOUT_AGENT_CACHE:-$HOME/.cache/lookout-agents}/filebeat-<version>/filebeat
# test/ingest-real-agents/filebeat.test.ts runs it (skips when it is absent).
set -euo pipefail
VERSION="${FILEBEAT_VERSION:-7.17.29}"
. "$(dirname "$0")/common.sh"
agent_prepare "filebeat $VERSION" "filebeat-$VERSION" "filebeat"
tmpmod=$(mktemp -d)
trap 'rm -rf "$tmpmod"' EXIT
# Any directory works for `go mod download`; a throwaway go.mod keeps it out of other modules.
src=$(cd "$tmpmod" && go mod init lookout-filebeat-fetch >/dev/null 2>&1 &&
  GOFLAGS=-mod=mod go mod download -json "github.com/elastic/beats/v7@v$VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "could not download github.com/elastic/beats/v7@v$VERSION" >&2; exit 1; }
rm -rf "$DIR/src"
cp -r "$src" "$DIR/src"
chmod -R u+w "$DIR/src"
# CGO off: the OSS filebeat needs no C; a static binary without system library dependencies.
(cd "$DIR/src" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" \
  nice -n 19 go build -trimpath -ldflags="-s -w" -o "$BIN.tmp" ./filebeat)
mv "$BIN.tmp" "$BIN"
rm -rf "$DIR/src"
agent_done "filebeat $VERSION"
