/**
 * A real Elasticsearch 8 node for tests, found or started in this order:
 *  1. `LOOKOUT_TEST_ELASTICSEARCH_URL` when set (nothing is started or stopped);
 *  2. a container, when a Docker engine answers within 3 s;
 *  3. the official integration-test distribution from Maven Central
 *     (`org.elasticsearch.distribution.integ-test-zip:elasticsearch:<ver>:zip`, a complete
 *     Elasticsearch without the bundled JDK) run on the machine's Java 17+, one node on
 *     127.0.0.1 with ephemeral ports and a temporary data directory. The zip is fetched once
 *     into ~/.m2 by Maven and unpacked once into node_modules/.cache/lookout-es/.
 * When none works, `startTestElasticsearch` returns `{ skip: reason }` and the caller prints
 * `SKIP: reason`. Startup is bounded; the node is killed on stop and on process exit.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const ES_VERSION = process.env.LOOKOUT_TEST_ES_VERSION ?? '8.19.21';
export const ES_ARTIFACT = `org.elasticsearch.distribution.integ-test-zip:elasticsearch:${ES_VERSION}:zip`;
const START_TIMEOUT_MS = Number(process.env.LOOKOUT_TEST_ES_START_TIMEOUT_MS ?? 120_000);
const ROOT = new URL('../..', import.meta.url).pathname;

export interface TestElasticsearch {
  url: string;
  /** How it was obtained: 'env' | 'docker' | 'maven'. */
  source: string;
  stop(): Promise<void>;
}

export type StartResult = TestElasticsearch | { skip: string };

async function healthy(url: string, timeoutMs = 3000): Promise<boolean> {
  try {
    const r = await fetch(`${url}/_cluster/health?wait_for_status=yellow&timeout=1s`, { signal: AbortSignal.timeout(timeoutMs) });
    return r.ok;
  } catch {
    return false;
  }
}

async function waitHealthy(url: string, deadline: number, alive: () => boolean): Promise<boolean> {
  while (Date.now() < deadline && alive()) {
    if (await healthy(url)) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

// ---- Docker ----------------------------------------------------------------------------------

async function tryDocker(): Promise<StartResult | undefined> {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 3000 });
  if (info.status !== 0 || !info.stdout.trim()) return undefined;
  const run = spawnSync(
    'docker',
    [
      'run', '-d', '--rm', '-p', '127.0.0.1::9200',
      '-e', 'discovery.type=single-node', '-e', 'xpack.security.enabled=false', '-e', 'ES_JAVA_OPTS=-Xms512m -Xmx512m',
      `docker.elastic.co/elasticsearch/elasticsearch:${ES_VERSION}`,
    ],
    { encoding: 'utf8', timeout: 300_000 },
  );
  const id = run.stdout.trim();
  if (run.status !== 0 || !id) return undefined;
  const stop = async () => void spawnSync('docker', ['rm', '-f', id], { timeout: 30_000 });
  const port = spawnSync('docker', ['port', id, '9200'], { encoding: 'utf8' }).stdout.trim().split('\n')[0]?.split(':').pop();
  const url = `http://127.0.0.1:${port}`;
  if (!port || !(await waitHealthy(url, Date.now() + START_TIMEOUT_MS, () => true))) {
    await stop();
    return undefined;
  }
  return { url, source: 'docker', stop };
}

// ---- Maven Central distribution --------------------------------------------------------------

function javaHome(): string | undefined {
  if (process.env.ES_JAVA_HOME && existsSync(join(process.env.ES_JAVA_HOME, 'bin', 'java'))) return process.env.ES_JAVA_HOME;
  if (process.env.JAVA_HOME && existsSync(join(process.env.JAVA_HOME, 'bin', 'java'))) return process.env.JAVA_HOME;
  const which = spawnSync('sh', ['-c', 'command -v java'], { encoding: 'utf8' }).stdout.trim();
  if (!which) return undefined;
  return dirname(dirname(realpathSync(which)));
}

const m2Repo = () => process.env.LOOKOUT_M2_REPO ?? join(homedir(), '.m2', 'repository');

function zipPath(): string {
  return join(m2Repo(), 'org/elasticsearch/distribution/integ-test-zip/elasticsearch', ES_VERSION, `elasticsearch-${ES_VERSION}.zip`);
}

/** Fetches the distribution through Maven (bounded); returns an error text or undefined. */
export function fetchDistribution(timeoutMs = 300_000): string | undefined {
  if (existsSync(zipPath())) return undefined;
  const args = ['-q', '-B', 'dependency:get', `-Dartifact=${ES_ARTIFACT}`, '-Dtransitive=false', `-Dmaven.repo.local=${m2Repo()}`];
  const mvn = spawnSync('mvn', args, { encoding: 'utf8', timeout: timeoutMs });
  if (mvn.error) return `mvn not runnable (${mvn.error.message})`;
  if (!existsSync(zipPath())) {
    const first = `${mvn.stdout}${mvn.stderr}`.split('\n').find((l) => l.includes('[ERROR]')) ?? `exit ${mvn.status}`;
    return `mvn dependency:get ${ES_ARTIFACT} failed: ${first.trim().slice(0, 300)}`;
  }
  return undefined;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** True when the unprivileged user can read `dir` (every parent must be traversable). */
function readableByNobody(dir: string): boolean {
  return spawnSync('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', 'test', '-r', join(dir, 'lib')], { timeout: 5000 }).status === 0;
}

/** Unpacks the zip once into a cache directory; returns the distribution's home. */
function unpack(cacheRoot: string): string {
  const home = join(cacheRoot, `elasticsearch-${ES_VERSION}`);
  if (existsSync(join(home, 'lib'))) return home;
  mkdirSync(cacheRoot, { recursive: true });
  const tmp = mkdtempSync(join(cacheRoot, 'unpack-'));
  let r = spawnSync('unzip', ['-q', zipPath(), '-d', tmp], { timeout: 120_000 });
  if (r.status !== 0) {
    r = spawnSync('jar', ['xf', zipPath()], { cwd: tmp, timeout: 120_000 });
    spawnSync('sh', ['-c', `chmod -R a+rX "${tmp}" && chmod a+x "${tmp}"/elasticsearch-*/bin/*`]);
  }
  const inner = readdirSync(tmp).find((n) => n.startsWith('elasticsearch-'));
  if (!inner) throw new Error(`could not unpack ${zipPath()}`);
  try {
    renameSync(join(tmp, inner), home);
  } catch {
    // Another test process unpacked it first.
  }
  rmSync(tmp, { recursive: true, force: true });
  return home;
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) {
    try {
      if (c.pid) process.kill(-c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

async function tryMaven(): Promise<StartResult> {
  const jh = javaHome();
  if (!jh) return { skip: 'no Elasticsearch: LOOKOUT_TEST_ELASTICSEARCH_URL unset, no Docker engine, and no java for the Maven distribution' };
  const fetchErr = fetchDistribution();
  if (fetchErr) return { skip: `no Elasticsearch: LOOKOUT_TEST_ELASTICSEARCH_URL unset, no Docker engine, ${fetchErr}` };
  const root = isRoot();
  if (root && spawnSync('setpriv', ['--version']).status !== 0) return { skip: 'no Elasticsearch: running as root and setpriv is missing (Elasticsearch refuses to run as root)' };
  let home: string;
  try {
    home = unpack(join(ROOT, 'node_modules', '.cache', 'lookout-es'));
    // Elasticsearch refuses root; the unprivileged user it runs as must reach the distribution.
    if (root && !readableByNobody(home)) home = unpack(join(tmpdir(), 'lookout-es-cache'));
    if (root && !readableByNobody(home)) return { skip: `no Elasticsearch: ${home} is not readable by user nobody` };
  } catch (e) {
    return { skip: `no Elasticsearch: unpacking ${zipPath()} failed: ${(e as Error).message}` };
  }
  const run = mkdtempSync(join(tmpdir(), 'lookout-es-node-'));
  const conf = join(run, 'config');
  cpSync(join(home, 'config'), conf, { recursive: true });
  for (const d of ['data', 'logs', 'tmp']) mkdirSync(join(run, d));
  if (root) spawnSync('chown', ['-R', 'nobody:nogroup', run]);
  try {
    accessSync(join(home, 'bin', 'elasticsearch'), constants.X_OK);
  } catch {
    return { skip: `no Elasticsearch: ${home}/bin/elasticsearch is not executable` };
  }
  const esArgs = [
    `-Epath.data=${join(run, 'data')}`,
    `-Epath.logs=${join(run, 'logs')}`,
    '-Enetwork.host=127.0.0.1',
    '-Ehttp.port=0',
    '-Etransport.port=0',
    '-Ediscovery.type=single-node',
    `-Ecluster.name=lookout-test-${process.pid}`,
    '-Enode.name=lookout-test',
    '-Expack.security.enabled=false',
    '-Ecluster.routing.allocation.disk.threshold_enabled=false',
  ];
  const cmd = root
    ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', join(home, 'bin', 'elasticsearch'), ...esArgs]
    : [join(home, 'bin', 'elasticsearch'), ...esArgs];
  // A watchdog shell leads the process group: when its stdin closes — stop() closes it, and so
  // does the death of this process, even by SIGKILL — it stops the node (TERM, at most 15 s),
  // then kills the whole group. No node outlives its test.
  const watchdog = '"$@" & es=$!; read _; kill -TERM $es 2>/dev/null; (sleep 15; kill -KILL 0) & wait $es; kill -KILL 0';
  const child = spawn('sh', ['-c', watchdog, 'sh', ...cmd], {
    cwd: run,
    detached: true, // own process group
    stdio: ['pipe', 'pipe', 'pipe'],
    env: {
      ...process.env,
      HOME: run,
      ES_JAVA_HOME: jh,
      ES_PATH_CONF: conf,
      ES_TMPDIR: join(run, 'tmp'),
      ES_JAVA_OPTS: process.env.LOOKOUT_TEST_ES_JAVA_OPTS ?? '-Xms512m -Xmx512m',
    },
  });
  children.add(child);
  let out = '';
  let port: number | undefined;
  const onData = (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
    const m = /AbstractHttpServerTransport.*publish_address \{[^}]*:(\d+)\}/.exec(out);
    if (m && port === undefined) port = Number(m[1]);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  let exited = false;
  const exitedP = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));

  const stop = async () => {
    if (!exited && child.pid) {
      child.stdin!.end();
      const t = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // gone
        }
      }, 20_000);
      await exitedP;
      clearTimeout(t);
      // The server JVM is a child of the launcher: make sure the whole group is gone.
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    children.delete(child);
    rmSync(run, { recursive: true, force: true });
  };

  const deadline = Date.now() + START_TIMEOUT_MS;
  while (port === undefined && !exited && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const url = `http://127.0.0.1:${port}`;
  if (port === undefined || !(await waitHealthy(url, deadline, () => !exited))) {
    const why = exited ? 'exited' : `not healthy within ${START_TIMEOUT_MS} ms`;
    const tail = out.trim().split('\n').slice(-4).join(' | ');
    await stop();
    return { skip: `Elasticsearch ${ES_VERSION} from Maven Central ${why}: ${tail}` };
  }
  return { url, source: 'maven', stop };
}

export async function startTestElasticsearch(): Promise<StartResult> {
  const env = process.env.LOOKOUT_TEST_ELASTICSEARCH_URL;
  if (env) {
    const url = env.replace(/\/+$/, '');
    if (!(await healthy(url, 10_000))) return { skip: `LOOKOUT_TEST_ELASTICSEARCH_URL=${url} does not answer /_cluster/health` };
    return { url, source: 'env', stop: async () => {} };
  }
  const docker = await tryDocker();
  if (docker) return docker;
  return tryMaven();
}
