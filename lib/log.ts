import type { LogLevel } from "./config.ts";

/** Writes one JSON object per line; fields must never hold a password or a token. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** True when lines at `level` are written (so a hot path can skip building them). */
  enabled(level: LogLevel): boolean;
}

const rank: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/**
 * A logger writing JSON lines at or above `level` to `write` (stderr by default).
 *
 * @example
 * createLogger("info").info("listening", { port: 8090 });
 */
export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => console.error(line),
): Logger {
  const log = (at: LogLevel) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (rank[at] < rank[level]) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields }));
  };
  return {
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    enabled: (at) => rank[at] >= rank[level],
  };
}
