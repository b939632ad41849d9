/**
 * Loads the official `.proto` files shipped in `proto/` (see proto/README.md) with protobufjs.
 * Imports resolve against `proto/`, `proto/prometheus/` (Prometheus' files import each other by
 * bare name) and protobufjs' bundled google/protobuf definitions.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const here = dirname(fileURLToPath(import.meta.url));

/** `proto/` at the repository root, found from source (plugins/x/) or a bundle (dist/). */
export function protoDir(): string {
  for (const c of [resolve(here, '../../proto'), resolve(here, '../proto'), resolve(here, 'proto'), resolve(process.cwd(), 'proto')]) {
    if (existsSync(join(c, 'opentelemetry'))) return c;
  }
  throw new Error('proto/ directory with the OpenTelemetry and Prometheus .proto files not found');
}

const protobufjsDir = dirname(createRequire(import.meta.url).resolve('protobufjs/package.json'));

/** Loads `files` (relative to proto/) synchronously into one Root. */
export function loadProtoRoot(files: readonly string[]): protobuf.Root {
  const base = protoDir();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    if (target.startsWith('/') && existsSync(target)) return target;
    for (const dir of [base, join(base, 'prometheus'), protobufjsDir]) {
      const p = join(dir, target);
      if (existsSync(p)) return p;
    }
    return target;
  };
  root.loadSync(files as string[], { keepCase: false });
  root.resolveAll();
  return root;
}

export const OTLP_PROTO_FILES = [
  'opentelemetry/proto/collector/metrics/v1/metrics_service.proto',
  'opentelemetry/proto/collector/logs/v1/logs_service.proto',
  'opentelemetry/proto/collector/trace/v1/trace_service.proto',
] as const;

export const PROMETHEUS_PROTO_FILES = ['prometheus/remote.proto', 'prometheus/io/prometheus/write/v2/types.proto'] as const;
