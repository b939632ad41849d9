/**
 * The `lookout` command. Exit codes: 0 ok, 1 runtime failure, 2 bad configuration or usage.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { PluginLoadError } from './loader.js';
import { startLookout } from './server.js';

export const HELP = `Lookout — one server for logs, metrics, traces and events.

Usage:
  lookout start [--config FILE] [--port N] [--host H] [--data-dir DIR]
  lookout --help
  lookout --version

Commands:
  start            Start the server (embedded storage under --data-dir by default).

Options:
  --config FILE    JSON or YAML configuration file (see docs/configuration.md)
  --port N         listen port (default 8080; env LOOKOUT_PORT)
  --host H         listen address (default 127.0.0.1; env LOOKOUT_HOST)
  --data-dir DIR   data directory (default ./data; env LOOKOUT_DATA_DIR)
  -h, --help       show this help
  -v, --version    print the version

Precedence: flags > environment (LOOKOUT_*) > config file > defaults.
Unknown keys or wrong types are errors (exit code 2).
`;

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (e) {
    process.stderr.write(`lookout: ${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.version) {
    process.stdout.write('lookout 0.1.0\n');
    return 0;
  }
  const cmd = positionals[0] ?? 'start';
  if (cmd === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (cmd !== 'start' || positionals.length > 1) {
    process.stderr.write(`lookout: unknown command "${positionals.join(' ')}"\n\n${HELP}`);
    return 2;
  }
  const flags: Record<string, unknown> = {};
  if (values.port !== undefined) {
    if (!/^[0-9]+$/.test(values.port)) {
      process.stderr.write(`config: --port: expected an integer, got "${values.port}"\n`);
      return 2;
    }
    flags.server = { port: Number(values.port) };
  }
  if (values.host !== undefined) flags.server = { ...(flags.server as object), host: values.host };
  if (values['data-dir'] !== undefined) flags.dataDir = values['data-dir'];
  let config;
  try {
    config = loadConfig({ file: values.config, env: process.env, flags });
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
  let running;
  try {
    running = await startLookout({ config });
  } catch (e) {
    if (e instanceof PluginLoadError || e instanceof ConfigError) {
      process.stderr.write(`lookout: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(`lookout: failed to start: ${(e as Error).stack ?? e}\n`);
    return 1;
  }
  process.stdout.write(`Lookout listening on ${running.url}\n`);
  if (running.kernel.adminTokenFile) process.stdout.write(`Admin token written to ${running.kernel.adminTokenFile}\n`);
  return await new Promise<number>((resolve) => {
    let stopping = false;
    const onSignal = (sig: string) => {
      if (stopping) return;
      stopping = true;
      process.stdout.write(`Received ${sig}, shutting down\n`);
      running
        .stop()
        .then(() => resolve(0))
        .catch((e) => {
          process.stderr.write(`lookout: shutdown failed: ${(e as Error).message}\n`);
          resolve(1);
        });
    };
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
  });
}

// Run when executed directly (dist/cli.js via bin/lookout.mjs, or tsx kernel/cli.ts).
const invoked = process.argv[1] ?? '';
if (/(?:^|[\\/])cli\.(?:js|ts|mjs)$/.test(invoked)) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}

export { loadConfig };
