/**
 * Starts a real Prometheus (Debian's /usr/bin/prometheus) on a free loopback port with the
 * remote-write receiver enabled and a temporary storage directory, for differential tests and
 * benchmarks. Callers skip (printing a `SKIP:` line) when the binary is absent.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
export { freePort };

export const PROMETHEUS_BIN = process.env.LOOKOUT_PROMETHEUS_BIN ?? '/usr/bin/prometheus';
export const PROMTOOL_BIN = process.env.LOOKOUT_PROMTOOL_BIN ?? '/usr/bin/promtool';

export function prometheusAvailable(): boolean {
  return existsSync(PROMETHEUS_BIN);
}

export function promtoolAvailable(): boolean {
  return existsSync(PROMTOOL_BIN);
}

/** `prometheus --version`'s version number, e.g. "2.42.0". */
export function prometheusVersion(): string {
  const r = spawnSync(PROMETHEUS_BIN, ['--version'], { encoding: 'utf8' });
  const m = /version (\d+\.\d+\.\d+)/.exec(`${r.stdout}${r.stderr}`);
  return m ? m[1]! : 'unknown';
}


export interface RunningPrometheus {
  url: string;
  pid: number;
  dir: string;
  version: string;
  /** Remote-write receiver URL. */
  writeUrl: string;
  stop(): Promise<void>;
}

export async function startPrometheus(opts: { args?: string[]; readyTimeoutMs?: number } = {}): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'lookout-prom-'));
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(configFile, 'global:\n  scrape_interval: 1m\n  evaluation_interval: 1m\nscrape_configs: []\n');
  const port = await freePort();
  const child: ChildProcess = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-remote-write-receiver',
      '--storage.tsdb.retention.time=30d',
      '--log.level=error',
      ...(opts.args ?? []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    if (stderr.length < 20_000) stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 30_000);
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`prometheus exited early (${child.exitCode}): ${stderr.slice(0, 2000)}`);
    }
    try {
      const r = await fetch(`${url}/-/ready`);
      await r.arrayBuffer();
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus did not become ready: ${stderr.slice(0, 2000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, pid: child.pid!, dir, version: prometheusVersion(), writeUrl: `${url}/api/v1/write`, stop };
}
