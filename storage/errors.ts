// Storage failures classified by SQLSTATE or connection error code, never by message
// text, so the server can answer 409 / 400 / 503 instead of a 500.
export type StorageFailure = 'conflict' | 'invalid-input' | 'unavailable';

const BY_SQLSTATE: Record<string, StorageFailure> = {
  '23505': 'conflict', // unique_violation
  '23503': 'conflict', // foreign_key_violation (the row it names went away meanwhile)
  '40001': 'unavailable', // serialization_failure: retryable
  '40P01': 'unavailable', // deadlock_detected: retryable
  '22P02': 'invalid-input', // invalid_text_representation (e.g. a malformed uuid)
  '22001': 'invalid-input', // string_data_right_truncation
  '22021': 'invalid-input', // character_not_in_repertoire (a NUL in text)
  '57P01': 'unavailable', // admin_shutdown
  '53300': 'unavailable', // too_many_connections
};

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'EPIPE']);

export function classifyStorageError(err: unknown): StorageFailure | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  return BY_SQLSTATE[code] ?? (CONNECTION_CODES.has(code) ? 'unavailable' : undefined);
}

/**
 * A unique index refused the write: a concurrent change took the name between a
 * domain's check and its insert. Domains turn it into the answer their check gives.
 */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '23505';
}
