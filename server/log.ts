// Structured logs: pino, one JSON object per line on stdout (time, level, msg and fields).
// `LOG_FORMAT=pretty` turns each object into one readable line for a person at a
// terminal, without a dependency or a transport thread (see formatPretty).
//
// What may be logged: ids, names of projects / environments / keys, route templates,
// statuses, durations, counts, error codes. Never a secret value, a password, a client
// secret, a token or a query string (test/server/log.test.ts runs the first-time setup
// with reads, writes and searches and looks for each of those in every line).
import { pino, stdTimeFunctions, type DestinationStream } from 'pino';
import type { LogLevel } from './config.js';

export type LogFields = Record<string, unknown>;

/** What the service needs of a logger (pino's Logger is one; tests pass a stub). */
export interface Logger {
  debug?(obj: LogFields | string, msg?: string): void;
  info(obj: LogFields | string, msg?: string): void;
  warn(obj: LogFields | string, msg?: string): void;
  error(obj: LogFields | string, msg?: string): void;
}

/**
 * Field names that could carry a credential if a future call site passed one by mistake:
 * pino replaces them before a line is written (defence in depth; no call site logs them).
 */
export const REDACTED_FIELDS = [
  'password',
  'clientSecret',
  'accessToken',
  'token',
  'secretValue',
  'authorization',
  'cookie',
  'csrfToken',
  'encryptionKey',
  'authSecret',
];

export interface LoggerOptions {
  level: LogLevel;
  format?: 'json' | 'pretty';
  /** Where lines go (default stdout, synchronously: nothing is lost at exit). */
  destination?: DestinationStream;
}

export function createLogger(opts: LoggerOptions) {
  const out = opts.destination ?? pino.destination({ dest: 1, sync: true });
  return pino(
    {
      level: opts.level,
      base: { pid: process.pid },
      timestamp: stdTimeFunctions.isoTime,
      // "level":"info" rather than 30: what people grep for.
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_FIELDS.flatMap((f) => [f, `*.${f}`]), censor: '[redacted]' },
    },
    opts.format === 'pretty' ? prettyStream(out) : out,
  );
}

const LEVEL_TAGS: Record<string, string> = { debug: 'DEBUG', info: 'INFO ', warn: 'WARN ', error: 'ERROR', fatal: 'FATAL' };

/**
 * One JSON log line as a person reads it: `2026-11-26T12:00:01.123Z INFO  msg key=value …`.
 * The whole timestamp, date and zone (always UTC, `Z`) included: a line read days later
 * or beside another host's says when it happened.
 */
export function formatPretty(line: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const { time, level, msg, pid: _pid, ...rest } = o;
  const clock = typeof time === 'string' ? time : '';
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${clock} ${LEVEL_TAGS[String(level)] ?? String(level)} ${String(msg ?? '')}${fields ? ` ${fields}` : ''}\n`;
}

/** pino writes one whole line per call. */
function prettyStream(out: DestinationStream): DestinationStream {
  return { write: (line: string) => void out.write(formatPretty(line)) };
}

/** A `(fields, message)` or `(message)` call as one text line: the message, then the fields as JSON. */
export function messageOf(obj: LogFields | string, msg?: string): string {
  if (typeof obj === 'string') return obj;
  const fields = Object.keys(obj).length > 0 ? JSON.stringify(obj) : '';
  return msg === undefined ? fields : fields === '' ? msg : `${msg} ${fields}`;
}

/** A Logger that hands each line as text to plain sinks (the CLI, tests). */
export function textLogger(
  sink: { info?(m: string): void; warn?(m: string): void; error?(m: string): void },
  opts: { fields?: boolean } = {},
): Logger {
  const text = opts.fields === false ? (o: LogFields | string, m?: string) => (typeof o === 'string' ? o : (m ?? '')) : messageOf;
  return {
    info: (o, m) => sink.info?.(text(o, m)),
    warn: (o, m) => sink.warn?.(text(o, m)),
    error: (o, m) => sink.error?.(text(o, m)),
  };
}
