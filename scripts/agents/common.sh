# Sourced by scripts/agents/build-*.sh: the part every agent build shares.
# agent_prepare LABEL DIRNAME BINNAME — sets DIR (the agent's cache dir), BIN and start; exits 0
# when the binary is already built (idempotent builds), 1 without Go; creates $DIR/src.
agent_prepare() {
  local label=$1 dirname=$2 binname=$3
  local cache="${LOOKOUT_AGENT_CACHE:-$HOME/.cache/lookout-agents}"
  DIR="$cache/$dirname"
  BIN="$DIR/$binname"
  if [ -x "$BIN" ]; then echo "$label already built: $BIN"; exit 0; fi
  command -v go >/dev/null || { echo "go is required" >&2; exit 1; }
  mkdir -p "$DIR/src"
  start=$(date +%s)
}

# ocb_install VERSION — the collector's builder (ocb) into $DIR, not $GOPATH/bin.
ocb_install() {
  GOBIN="$DIR" GOFLAGS=-mod=mod nice -n 19 go install "go.opentelemetry.io/collector/cmd/builder@v$1"
}

# agent_done LABEL — the closing line with the build time.
agent_done() {
  echo "$1 built in $(( $(date +%s) - start ))s: $BIN"
}
