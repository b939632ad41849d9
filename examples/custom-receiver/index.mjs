// A third-party Lookout plugin: a receiver for plain-text log lines.
//
//   POST /ingester/lines?service=<name>   Content-Type: text/plain   (Svc-Api-Key when ingest auth is on)
//
// Each non-empty line becomes a log record. Enable it by naming this file in `plugins`:
//   { "plugins": ["*", "./examples/custom-receiver/index.mjs"] }
// A plugin is a plain object (or `definePlugin({...})` from 'lookout'); it needs no build step.

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/** @type {import('lookout').PluginDefinition} */
export default {
  name: 'example-lines-receiver',
  description: 'Plain-text lines as log records (an example third-party receiver).',
  register(ctx) {
    const defaultService = String(ctx.options.defaultService ?? 'lines');
    ctx.extensions.receiver({
      name: 'lines',
      routes: [
        {
          path: '/lines',
          auth: 'svc',
          contentTypes: ['text/plain'],
          decode(req) {
            const service = req.query.get('service') || defaultService;
            const now = BigInt(Date.now()) * 1_000_000n;
            const logs = [];
            let i = 0;
            for (const line of req.body.toString('utf8').split('\n')) {
              if (line.trim() === '') continue;
              const first = line.split(/\s/, 1)[0].toLowerCase();
              const labels = { svc_stream: 'logs', service, source: 'lines' };
              if (LEVELS.includes(first)) labels.level = first;
              logs.push({ timestampNs: now + BigInt(i++), message: line, labels, facets: {} });
            }
            return {
              batch: { logs },
              respond: () => ({ status: 200, contentType: 'application/json', body: JSON.stringify({ accepted: logs.length }) }),
            };
          },
        },
      ],
    });
  },
};
