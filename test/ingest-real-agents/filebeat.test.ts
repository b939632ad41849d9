/**
 * The real Filebeat (built by scripts/agents/build-filebeat.sh) tails a log file with the
 * configuration of examples/agents/filebeat/filebeat.yml and ships it through its
 * elasticsearch output (ApiKey auth, gzip) to Lookout's shipper bulk endpoint; the lines are
 * then read back with SvcQL over GraphQL.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INGEST_KEY, startTestServer, tempDir, type TestServer } from '../helpers/server.js';
import { agentBinary, exampleConfig, queryLogs, startAgent, waitFor, type RunningAgent } from './harness.js';

const VERSION = process.env.FILEBEAT_VERSION ?? '7.17.29';
const bin = agentBinary(`filebeat-${VERSION}/filebeat`);

let srv: TestServer | undefined;
let agent: RunningAgent | undefined;
let logFile = '';

if (!bin) {
  console.log('SKIP: filebeat binary not built (run scripts/agents/build-filebeat.sh)');
  test.skip('filebeat → shipper bulk', () => {});
} else {
  test.before(async () => {
    srv = await startTestServer({ auth: { ingestApiKeys: [INGEST_KEY] } });
    const dir = tempDir('lookout-filebeat-');
    mkdirSync(join(dir, 'app'));
    logFile = join(dir, 'app', 'app.log');
    writeFileSync(logFile, Array.from({ length: 50 }, (_, i) => `fb-marker line ${i}\n`).join(''));
    const cfg = join(dir, 'filebeat.yml');
    writeFileSync(
      cfg,
      exampleConfig('filebeat/filebeat.yml', [
        ['/var/log/app/*.log', join(dir, 'app', '*.log')],
        ['http://lookout:8080', srv.url],
        ['ignored:k-123', `ignored:${INGEST_KEY}`],
      ]) +
        // Test-only: pick up appended lines quickly, no monitoring/HTTP endpoints of its own.
        '\nfilebeat.inputs.0.prospector.scanner.check_interval: 1s\nlogging.level: info\nhttp.enabled: false\n',
    );
    agent = startAgent(bin, [
      '-e',
      '-c', cfg,
      '--strict.perms=false',
      '--path.home', dir,
      '--path.data', join(dir, 'data'),
      '--path.logs', join(dir, 'logs'),
    ]);
  });
  test.after(async () => {
    await agent?.stop();
    await srv?.stop();
  });

  test('filebeat: every line of the tailed file arrives with its Beat metadata', async () => {
    const logs = await waitFor(
      '50 filebeat lines',
      async () => {
        const l = await queryLogs(srv!, '"fb-marker"');
        return l.length >= 50 ? l : undefined;
      },
      agent,
    );
    assert.is(logs.length, 50, 'each line exactly once');
    const line7 = logs.find((l) => l.message === 'fb-marker line 7');
    assert.ok(line7, 'message is the line');
    assert.is(line7!.labels.svc_stream, 'logs');
    assert.ok(line7!.labels.host, 'host.name → host label');
    assert.is(line7!.facets['log.file.path'], logFile);
    assert.is(line7!.facets['agent.type'], 'filebeat');
    assert.is(line7!.facets['agent.version'], VERSION);
    assert.match(String(line7!.facets._index), /^filebeat-/);
    // Filebeat stamps read time; it must be close to now.
    const ageMs = Date.now() - Number(BigInt(line7!.timestamp) / 1_000_000n);
    assert.ok(ageMs >= 0 && ageMs < 120_000, `timestamp ${line7!.timestamp} is recent`);
  });

  test('filebeat: appended lines follow, none duplicated', async () => {
    appendFileSync(logFile, Array.from({ length: 10 }, (_, i) => `fb-marker appended ${i}\n`).join(''));
    const logs = await waitFor(
      'appended lines',
      async () => {
        const l = await queryLogs(srv!, '"fb-marker appended"');
        return l.length >= 10 ? l : undefined;
      },
      agent,
    );
    assert.is(logs.length, 10);
    assert.is((await queryLogs(srv!, '"fb-marker"')).length, 60);
    assert.not.match(agent!.log(), /Failed to connect|failed to publish events|Cannot index event/i);
  });
}

test.run();
