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

const encoder = new TextEncoder();

/**
 * Writes `line` and a newline to stderr as bytes. Not `console.error`, which formats its arguments
 * first (it looks for `%` directives in a string): 3.5 µs a line against 1.2 here, and a server
 * logging every request at the default level answered `GET /health` 50–60 % faster once its lines
 * were written this way; console's first call also cost each start 1.5 ms (bench/README.md). A
 * line that cannot be written (stderr closed) is dropped: a request must not fail for its log line.
 */
export function toStderr(line: string): void {
  const bytes = encoder.encode(line + "\n");
  try {
    for (let written = 0; written < bytes.length;) {
      written += Deno.stderr.writeSync(written ? bytes.subarray(written) : bytes);
    }
  } catch {
    // nowhere left to say it
  }
}

/**
 * Writes `line` through `console.error`, for where the console is what is collected: Deno Deploy's
 * logs, and Deno's OpenTelemetry export (`OTEL_DENO=true`), which turns console calls into log
 * records.
 */
export const toConsole = (line: string): void => console.error(line);

/**
 * A logger writing JSON lines at or above `level` to `write` ({@link toStderr} by default).
 *
 * @example
 * createLogger("info").info("listening", { port: 8090 });
 */
export function createLogger(level: LogLevel, write: (line: string) => void = toStderr): Logger {
  const log = (at: LogLevel) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (rank[at] < rank[level]) return;
    write(JSON.stringify({ time: isoTime(Date.now()), level: at, msg, ...fields }));
  };
  return {
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    enabled: (at) => rank[at] >= rank[level],
  };
}

const DAY_MS = 86_400_000;

/**
 * `new Date(ms).toISOString()` for the years 1970 to 9999, by arithmetic: the first call of
 * `Date.prototype.toISOString` maps a megabyte of Deno's binary (time zone data) that the server
 * otherwise never touches at start (`bench/README.md`, idle RSS). The civil date of a day number is
 * Howard Hinnant's `civil_from_days` (eras of 400 years, years starting in March).
 */
export function isoTime(ms: number): string {
  const days = Math.floor(ms / DAY_MS);
  const inDay = ms - days * DAY_MS;
  const z = days + 719_468; // days since 0000-03-01
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra -
    (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shifted = Math.floor((5 * dayOfYear + 2) / 153); // 0: March … 11: February
  const day = dayOfYear - Math.floor((153 * shifted + 2) / 5) + 1;
  const month = shifted < 10 ? shifted + 3 : shifted - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const pad = (value: number, width = 2) => String(value).padStart(width, "0");
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(Math.floor(inDay / 3_600_000))}:` +
    `${pad(Math.floor(inDay / 60_000) % 60)}:${pad(Math.floor(inDay / 1000) % 60)}.` +
    `${pad(inDay % 1000, 3)}Z`;
}
