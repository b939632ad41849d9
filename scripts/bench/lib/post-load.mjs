// Load generator for ingest benchmarks, run as a separate process so the server under test
// does not share its event loop. Posts one pre-encoded body over keep-alive connections.
//
//   node post-load.mjs <url> <bodyFile> <headersJSON> <concurrency> <seconds>
//
// Prints one JSON line: {requests, ok, statuses, seconds, latencyMsP50, latencyMsP99}.
import http from 'node:http';
import { readFileSync } from 'node:fs';

const [url, bodyFile, headersJson, concurrencyArg, secondsArg] = process.argv.slice(2);
const body = readFileSync(bodyFile);
const headers = { ...JSON.parse(headersJson), 'content-length': String(body.length) };
const concurrency = Number(concurrencyArg);
const seconds = Number(secondsArg);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
const target = new URL(url);

const statuses = {};
const lat = [];
let requests = 0;
let ok = 0;
const start = performance.now();
const deadline = start + seconds * 1000;

function one() {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, method: 'POST', headers, agent },
      (res) => {
        res.resume();
        res.on('end', () => {
          requests++;
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
          if (res.statusCode >= 200 && res.statusCode < 300) ok++;
          lat.push(performance.now() - t0);
          resolve();
        });
      },
    );
    req.on('error', () => {
      requests++;
      statuses.error = (statuses.error ?? 0) + 1;
      resolve();
    });
    req.end(body);
  });
}

async function worker() {
  while (performance.now() < deadline) await one();
}

await Promise.all(Array.from({ length: concurrency }, worker));
const elapsed = (performance.now() - start) / 1000;
lat.sort((a, b) => a - b);
const q = (p) => (lat.length ? Math.round(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] * 10) / 10 : 0);
agent.destroy();
process.stdout.write(JSON.stringify({ requests, ok, statuses, seconds: elapsed, latencyMsP50: q(0.5), latencyMsP99: q(0.99) }) + '\n');
