#!/usr/bin/env bash
# Builds an OpenTelemetry Collector with the vendor's Datadog exporter ("otelcol-datadog"), which
# is the vendor agent's own code (the agent's metrics serializer, trace writer and logs pipeline
# from github.com/DataDog/datadog-agent): it posts MetricPayload protobuf to /api/v2/series,
# AgentPayload protobuf to /api/v0.2/traces and JSON logs to /api/v2/logs, as the agent does.
# The agent binary itself cannot be built from the Go module proxy (see docs/ingest.md).
# Idempotent. Output:
#   ${LOOKOUT_AGENT_CACHE:-$HOME/.cache/lookout-agents}/otelcol-datadog-<version>/otelcol-datadog
# test/ingest-real-agents/datadog-exporter.test.ts runs it (skips when it is absent).
set -euo pipefail
# 0.155.0: the newest release whose datadog-agent modules the module proxy here serves in full.
VERSION="${OTELCOL_DATADOG_VERSION:-0.155.0}"
. "$(dirname "$0")/common.sh"
agent_prepare "otelcol-datadog $VERSION" "otelcol-datadog-$VERSION" "otelcol-datadog"
ocb_install "$VERSION"
cat > "$DIR/manifest.yaml" <<YAML
dist:
  name: otelcol-datadog
  description: OpenTelemetry Collector with the Datadog exporter, for Lookout's agent tests
  output_path: $DIR/src
  version: $VERSION
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$VERSION
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor v$VERSION
exporters:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/datadogexporter v$VERSION
YAML
# The builder's own `go mod tidy` also resolves the test-only dependencies of every datadog-agent
# package, some of which the checksum database cannot verify; so the builder only writes the
# sources, `go get` pins the components (and what the generated main.go imports), and
# `go build -mod=mod` resolves just what the binary imports.
nice -n 19 "$DIR/builder" --config "$DIR/manifest.yaml" --skip-get-modules --skip-compilation
PROVIDERS="${OTELCOL_DATADOG_PROVIDERS_VERSION:-1.61.0}"
(cd "$DIR/src" && rm -f go.mod go.sum && go mod init otelcol-datadog >/dev/null 2>&1 &&
  GOFLAGS="${GOFLAGS:-} -mod=mod" nice -n 19 go get \
    "go.opentelemetry.io/collector/otelcol@v$VERSION" \
    "go.opentelemetry.io/collector/confmap/provider/envprovider@v$PROVIDERS" \
    "go.opentelemetry.io/collector/confmap/provider/fileprovider@v$PROVIDERS" \
    "go.opentelemetry.io/collector/confmap/provider/httpprovider@v$PROVIDERS" \
    "go.opentelemetry.io/collector/confmap/provider/httpsprovider@v$PROVIDERS" \
    "go.opentelemetry.io/collector/confmap/provider/yamlprovider@v$PROVIDERS" \
    "go.opentelemetry.io/collector/receiver/otlpreceiver@v$VERSION" \
    "go.opentelemetry.io/collector/processor/batchprocessor@v$VERSION" \
    "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/datadogexporter@v$VERSION" &&
  GOFLAGS="${GOFLAGS:-} -mod=mod" nice -n 19 go build -trimpath -ldflags="-s -w" -o "$BIN.tmp" .)
mv "$BIN.tmp" "$BIN"
rm -rf "$DIR/src"
agent_done "otelcol-datadog $VERSION"
