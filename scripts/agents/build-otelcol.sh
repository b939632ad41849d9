#!/usr/bin/env bash
# Builds a minimal OpenTelemetry Collector ("otelcol-lookout") with the collector's own builder
# (ocb) from the Go module proxy: otlp + filelog receivers, batch processor, otlphttp, debug and
# prometheusremotewrite exporters — the components examples/agents/otel-collector/ uses.
# Idempotent: does nothing when the binary exists. Output:
#   ${LOOKOUT_AGENT_CACHE:-$HOME/.cache/lookout-agents}/otelcol-<version>/otelcol-lookout
# test/ingest-real-agents/otel-collector.test.ts runs it (skips when it is absent).
set -euo pipefail
VERSION="${OTELCOL_VERSION:-0.160.0}"
. "$(dirname "$0")/common.sh"
agent_prepare "otelcol $VERSION" "otelcol-$VERSION" "otelcol-lookout"
ocb_install "$VERSION"
cat > "$DIR/manifest.yaml" <<YAML
dist:
  name: otelcol-lookout
  description: OpenTelemetry Collector for Lookout's agent tests
  output_path: $DIR/src
  version: $VERSION
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$VERSION
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver v$VERSION
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor v$VERSION
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter v$VERSION
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v$VERSION
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusremotewriteexporter v$VERSION
YAML
# -trimpath/-s -w keep the binary small; GOFLAGS from the environment (e.g. -buildvcs=false) apply.
GOFLAGS="${GOFLAGS:-} -mod=mod" nice -n 19 "$DIR/builder" --config "$DIR/manifest.yaml" --ldflags="-s -w"
cp "$DIR/src/otelcol-lookout" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
rm -rf "$DIR/src"
agent_done "otelcol $VERSION"
