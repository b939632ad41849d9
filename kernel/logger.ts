/** A small leveled logger writing one JSON object per line to stderr. Never give it secrets. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(
  level: LogLevel = 'info',
  base: Record<string, unknown> = {},
  write: (line: string) => void = (l) => process.stderr.write(l + '\n'),
): Logger {
  const min = ORDER[level];
  const emit = (lv: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lv] < min) return;
    const rec: Record<string, unknown> = { ts: new Date().toISOString(), level: lv, msg, ...base, ...fields };
    if (rec.err instanceof Error) rec.err = { message: rec.err.message, stack: rec.err.stack };
    write(JSON.stringify(rec));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (f) => createLogger(level, { ...base, ...f }, write),
  };
}
