// One error table for the service. Domain code throws AppError with a stable code;
// server/http maps it to the Infisical-shaped JSON body in exactly one place.
import { CryptoError } from '../crypto/index.js';
import { AuditChainError } from '../storage/audit.js';
import { classifyStorageError, DiskFullError } from '../storage/errors.js';

export const ERROR_TABLE = {
  BAD_REQUEST: { status: 400, name: 'BadRequest' },
  VALIDATION: { status: 422, name: 'ValidationFailure' },
  UNAUTHORIZED: { status: 401, name: 'UnauthorizedError' },
  TOKEN_INVALID: { status: 401, name: 'TokenError' },
  FORBIDDEN: { status: 403, name: 'PermissionDenied' },
  NOT_FOUND: { status: 404, name: 'NotFound' },
  SECRET_PATH_NOT_FOUND: { status: 404, name: 'SecretPathNotFound' },
  CONFLICT: { status: 409, name: 'Conflict' },
  LENGTH_REQUIRED: { status: 411, name: 'LengthRequired' },
  PAYLOAD_TOO_LARGE: { status: 413, name: 'PayloadTooLarge' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, name: 'UnsupportedMediaType' },
  RATE_LIMITED: { status: 429, name: 'TooManyRequests' },
  INTERNAL: { status: 500, name: 'InternalServerError' },
  UNAVAILABLE: { status: 503, name: 'ServiceUnavailable' },
} as const satisfies Record<string, { status: number; name: string }>;

/** Retry-After on a 503 for a dependency outage (database, Redis, crypto, deadline). */
export const RETRY_AFTER_SECONDS = 2;

/** Retry-After on a 503 for a full disk: freeing space is a person's job, not a reconnect's. */
export const DISK_FULL_RETRY_AFTER_SECONDS = 30;

export type ErrorCode = keyof typeof ERROR_TABLE;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: unknown;
  /** Overrides the `error` field where the contract names a specific one. */
  readonly errorName?: string;
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { details?: unknown; errorName?: string; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = opts.details;
    this.errorName = opts.errorName;
    this.headers = opts.headers;
  }
}

export interface ErrorBody {
  reqId: string;
  statusCode: number;
  message: string;
  error: string;
  details?: unknown;
}

/** The single mapping from any thrown value to a status and a contract-shaped body. */
export function toErrorBody(err: unknown, reqId: string): { status: number; body: ErrorBody; headers?: Record<string, string> } {
  if (err instanceof AppError) {
    const entry = ERROR_TABLE[err.code];
    const body: ErrorBody = {
      reqId,
      statusCode: entry.status,
      message: err.message,
      error: err.errorName ?? entry.name,
    };
    if (err.details !== undefined) body.details = err.details;
    return { status: entry.status, body, headers: err.headers };
  }
  // The crypto workers are gone (the process is about to restart): a dependency outage.
  if (err instanceof CryptoError && err.code === 'KEY_UNAVAILABLE') {
    return toErrorBody(new AppError('UNAVAILABLE', 'Encryption is unavailable; retry shortly', { headers: { 'Retry-After': '5' } }), reqId);
  }
  // An edited or missing audit anchor: nothing can be audited, so nothing was changed.
  if (err instanceof AuditChainError) {
    return toErrorBody(
      new AppError('INTERNAL', 'The audit trail cannot be extended (its head anchor is missing or was edited); nothing was changed', {
        errorName: 'AuditTrailBroken',
      }),
      reqId,
    );
  }
  const storage = classifyStorageError(err);
  // A full disk is a 503 naming it (never a 500): writes are refused until space is freed,
  // reads go on. Retry-After as for any outage; the cause is in `error` and `message`.
  if (storage === 'disk-full') {
    const message =
      err instanceof DiskFullError
        ? 'The disk holding the database (DATA_DIR) is full: writes are refused until space is freed there; reads still work'
        : "The database's disk is full (no space left on device): writes fail until space is freed there; reads still work";
    return toErrorBody(new AppError('UNAVAILABLE', message, { errorName: 'InsufficientStorage', headers: { 'Retry-After': String(DISK_FULL_RETRY_AFTER_SECONDS) } }), reqId);
  }
  if (storage) {
    const [code, message] = (
      {
        conflict: ['CONFLICT', 'The request conflicts with a concurrent change; retry it'],
        'invalid-input': ['BAD_REQUEST', 'A value in the request is not of the expected form'],
        unavailable: ['UNAVAILABLE', 'The database is unavailable; retry shortly'],
      } as const
    )[storage];
    // A client that honours Retry-After comes back once a reconnect has had its chance.
    const headers = storage === 'unavailable' ? { 'Retry-After': String(RETRY_AFTER_SECONDS) } : undefined;
    return toErrorBody(new AppError(code, message, { headers }), reqId);
  }
  // Anything else is a bug: never echo its message (it could carry data).
  return {
    status: 500,
    body: { reqId, statusCode: 500, message: 'Something went wrong', error: 'InternalServerError' },
  };
}
