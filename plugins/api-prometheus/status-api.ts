/**
 * The status and management endpoints Grafana and promtool call besides queries: build info,
 * config, runtime info, flags, and the (empty) rules, alerts, targets and alertmanagers.
 */
import { readFileSync } from 'node:fs';
import type { LookoutConfig } from '../../kernel/config.js';
import { success, type PromEnvelope } from './response.js';

/**
 * The Prometheus API version we answer as. Grafana reads `version` to pick features; our
 * PromQL follows Prometheus 3.x semantics.
 */
export const PROMETHEUS_COMPAT_VERSION = '3.0.0';

function lookoutVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export class StatusApi {
  private readonly startTime = new Date().toISOString();
  private readonly version = lookoutVersion();

  constructor(private readonly config: LookoutConfig) {}

  buildinfo(): PromEnvelope {
    return success({
      version: PROMETHEUS_COMPAT_VERSION,
      revision: `lookout-${this.version}`,
      branch: 'lookout',
      buildUser: 'lookout',
      buildDate: '',
      goVersion: `node${process.versions.node}`,
    });
  }

  /** A Prometheus-shaped configuration describing what the query engine uses. */
  configYaml(): PromEnvelope {
    const lines = [
      'global:',
      '  scrape_interval: 1m',
      '  scrape_timeout: 10s',
      '  evaluation_interval: 1m',
      '  external_labels: {}',
      'scrape_configs: []',
      '',
    ];
    return success({ yaml: lines.join('\n') });
  }

  runtimeinfo(): PromEnvelope {
    return success({
      startTime: this.startTime,
      CWD: process.cwd(),
      reloadConfigSuccess: true,
      lastConfigTime: this.startTime,
      corruptionCount: 0,
      goroutineCount: 0,
      GOMAXPROCS: 1,
      GOMEMLIMIT: 0,
      GOGC: '',
      GODEBUG: '',
      storageRetention: this.config.storage.retention.metrics,
    });
  }

  flags(): PromEnvelope {
    const l = this.config.limits;
    return success({
      'query.lookback-delta': '5m',
      'query.max-samples': String(l.maxSamplesPerQuery),
      'query.timeout': `${l.queryTimeoutSeconds}s`,
      'storage.tsdb.retention.time': this.config.storage.retention.metrics,
      'web.enable-remote-write-receiver': 'true',
    });
  }

  rules(): PromEnvelope {
    return success({ groups: [] });
  }

  alerts(): PromEnvelope {
    return success({ alerts: [] });
  }

  targets(): PromEnvelope {
    return success({ activeTargets: [], droppedTargets: [] });
  }

  alertmanagers(): PromEnvelope {
    return success({ activeAlertmanagers: [], droppedAlertmanagers: [] });
  }
}
