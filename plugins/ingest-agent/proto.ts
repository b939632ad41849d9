/**
 * The agent's protobuf messages (proto/agent/, see its README for sources), loaded once with
 * protobufjs reflection. The .proto files are located by walking up from this module, so the
 * same code works from the sources (tsx) and from the bundle in dist/.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { checkWire } from '../ingest-otlp/wire-check.js';

function findProtoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'proto', 'agent');
    if (existsSync(join(candidate, 'lookout', 'trace_intake.proto'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error('proto/agent not found next to the Lookout installation');
}

/** protobufjs decode after a strict wire check (protobufjs alone accepts e.g. field number 0). */
export function decodeStrict(type: protobuf.Type, body: Uint8Array): protobuf.Message {
  checkWire(type, body);
  return type.decode(body);
}

export interface AgentTypes {
  metricPayload: protobuf.Type;
  traceIntake: protobuf.Type;
  sketchPayload: protobuf.Type;
}

let types: AgentTypes | undefined;

export function agentTypes(): AgentTypes {
  if (types) return types;
  const base = findProtoDir();
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(base, target);
  root.loadSync(['datadog/agentpayload/agent_payload.proto', 'lookout/trace_intake.proto'], { keepCase: true });
  types = {
    metricPayload: root.lookupType('datadog.agentpayload.MetricPayload'),
    traceIntake: root.lookupType('lookout.agent.TraceIntake'),
    sketchPayload: root.lookupType('datadog.agentpayload.SketchPayload'),
  };
  return types;
}

/** protobufjs' Long (uint64/int64 without precision loss). */
export interface LongLike {
  low: number;
  high: number;
  unsigned: boolean;
  toString(radix?: number): string;
  toNumber(): number;
}

export type Int64 = LongLike | number;

const hex8 = (n: number) => (n >>> 0).toString(16).padStart(8, '0');

/** A uint64 as 16 lowercase hex digits. */
export function uint64Hex(v: Int64): string {
  if (typeof v === 'number') return BigInt.asUintN(64, BigInt(Math.trunc(v))).toString(16).padStart(16, '0');
  return hex8(v.high) + hex8(v.low);
}

export function isZero64(v: Int64): boolean {
  return typeof v === 'number' ? v === 0 : v.low === 0 && v.high === 0;
}

export function int64Big(v: Int64): bigint {
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  const u = (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
  return v.unsigned ? u : BigInt.asIntN(64, u);
}

export function int64Num(v: Int64): number {
  return typeof v === 'number' ? v : v.toNumber();
}
