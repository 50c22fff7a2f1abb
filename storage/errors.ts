// Storage failures classified by SQLSTATE or connection error code, never by message
// text, so the server can answer 409 / 400 / 503 instead of a 500.
export type StorageFailure = 'conflict' | 'invalid-input' | 'unavailable' | 'disk-full';

const BY_SQLSTATE: Record<string, StorageFailure> = {
  '23505': 'conflict', // unique_violation
  '23503': 'conflict', // foreign_key_violation (the row it names went away meanwhile)
  '40001': 'unavailable', // serialization_failure: retryable
  '40P01': 'unavailable', // deadlock_detected: retryable
  '22P02': 'invalid-input', // invalid_text_representation (e.g. a malformed uuid)
  '22001': 'invalid-input', // string_data_right_truncation
  '22021': 'invalid-input', // character_not_in_repertoire (a NUL in text)
  '57P01': 'unavailable', // admin_shutdown
  '57P02': 'unavailable', // crash_shutdown
  '57P03': 'unavailable', // cannot_connect_now ("the database system is starting up")
  '57P05': 'unavailable', // idle_session_timeout
  '53300': 'unavailable', // too_many_connections
  '53000': 'unavailable', // insufficient_resources
  '55P03': 'unavailable', // lock_not_available (lock_timeout)
  '57014': 'unavailable', // query_canceled (statement_timeout)
  '53100': 'disk-full', // disk_full: PostgreSQL's own (a file or the WAL could not grow), or DiskFullError
};

/**
 * A write refused before it began because the disk holding the embedded database is below
 * its reserve (storage/diskGuard.ts). Its code is PostgreSQL's disk_full, so it is classified
 * (and answered) as the database's own "No space left on device". The message names the
 * folder and the figures: for the log, not for a client.
 */
export class DiskFullError extends Error {
  override readonly name = 'DiskFullError';
  readonly code = '53100';
  constructor(
    message: string,
    readonly freeBytes: number,
    readonly reserveBytes: number,
  ) {
    super(message);
  }
}

/** Driver and socket codes for a connection that is gone, refused or never made. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

export function classifyStorageError(err: unknown): StorageFailure | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  const known = BY_SQLSTATE[code];
  if (known) return known;
  // SQLSTATE class 08: connection exception (08000, 08003, 08006, 08001, 08004, 08P01, ...).
  if (code.length === 5 && code.startsWith('08')) return 'unavailable';
  // A file write of this process (the embedded database's) that found the disk full.
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'disk-full';
  return CONNECTION_CODES.has(code) ? 'unavailable' : undefined;
}

export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '23505';
}
