// Every error code maps to the status the contract names, and storage failures are
// classified by code, never surfacing as a 500 with their message.
import t from 'tap';
import { AppError, ERROR_TABLE, toErrorBody, type ErrorCode } from '../../server/errors.js';
import { DiskFullError } from '../../storage/errors.js';

const EXPECTED: Record<ErrorCode, [number, string]> = {
  BAD_REQUEST: [400, 'BadRequest'],
  VALIDATION: [422, 'ValidationFailure'],
  UNAUTHORIZED: [401, 'UnauthorizedError'],
  TOKEN_INVALID: [401, 'TokenError'],
  FORBIDDEN: [403, 'PermissionDenied'],
  NOT_FOUND: [404, 'NotFound'],
  SECRET_PATH_NOT_FOUND: [404, 'SecretPathNotFound'],
  CONFLICT: [409, 'Conflict'],
  LENGTH_REQUIRED: [411, 'LengthRequired'],
  PAYLOAD_TOO_LARGE: [413, 'PayloadTooLarge'],
  UNSUPPORTED_MEDIA_TYPE: [415, 'UnsupportedMediaType'],
  RATE_LIMITED: [429, 'TooManyRequests'],
  INTERNAL: [500, 'InternalServerError'],
  UNAVAILABLE: [503, 'ServiceUnavailable'],
};

t.test('every code maps to its contract status and name', async (t) => {
  t.same(Object.keys(ERROR_TABLE).sort(), Object.keys(EXPECTED).sort());
  for (const [code, [status, name]] of Object.entries(EXPECTED)) {
    const { status: s, body } = toErrorBody(new AppError(code as ErrorCode, 'm'), 'req-x');
    t.equal(s, status, code);
    t.same(body, { reqId: 'req-x', statusCode: status, message: 'm', error: name });
  }
});

t.test('storage failures by SQLSTATE', async (t) => {
  t.equal(toErrorBody(Object.assign(new Error('duplicate key value violates ... secret value'), { code: '23505' }), 'r').status, 409);
  t.equal(toErrorBody(Object.assign(new Error('x'), { code: '22P02' }), 'r').status, 400);
  t.equal(toErrorBody(Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' }), 'r').status, 400, 'a NUL that reaches the database is bad input');
  t.equal(toErrorBody(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'r').status, 503);
  const leak = toErrorBody(Object.assign(new Error('duplicate key (value)=(hunter2)'), { code: '23505' }), 'r');
  t.notMatch(leak.body.message, /hunter2/, 'the driver message is never echoed');
});

t.test('every connection-class failure is a 503 with Retry-After', async (t) => {
  const codes = ['08000', '08001', '08003', '08004', '08006', '08P01', '57P01', '57P02', '57P03', '53300', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT'];
  for (const code of codes) {
    const r = toErrorBody(Object.assign(new Error('the database system is starting up'), { code }), 'r');
    t.equal(r.status, 503, code);
    t.equal(r.body.error, 'ServiceUnavailable', code);
    t.match(r.headers?.['Retry-After'], /^\d+$/, `${code}: Retry-After`);
  }
  t.equal(toErrorBody(Object.assign(new Error('x'), { code: '23505' }), 'r').headers, undefined, 'a conflict has no Retry-After');
  t.equal(toErrorBody(Object.assign(new Error('x'), { code: '08' }), 'r').status, 500, 'only whole SQLSTATEs of class 08');
});

t.test('anything else: 500 with a fixed message', async (t) => {
  const r = toErrorBody(new Error('secret value hunter2'), 'r');
  t.equal(r.status, 500);
  t.equal(r.body.message, 'Something went wrong');
});

t.test('a full disk is a 503 InsufficientStorage naming it, never a 500 (issue 31)', async (t) => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['PostgreSQL 53100 (disk_full)', Object.assign(new Error('could not extend file "base/5/16562": No space left on device'), { code: '53100' }), /database's disk is full/],
    ['ENOSPC of a file write', Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }), /database's disk is full/],
    ['the disk guard', new DiskFullError('the disk holding /data is full: 10 MiB free', 10, 64), /disk holding the database \(DATA_DIR\) is full/],
  ];
  for (const [what, err, message] of cases) {
    const r = toErrorBody(err, 'r');
    t.equal(r.status, 503, what);
    t.equal(r.body.error, 'InsufficientStorage', what);
    t.match(r.body.message, message, what);
    t.notMatch(r.body.message, /base\/5|\/data/, `${what}: no file or folder name reaches the client`);
    t.match(r.headers?.['Retry-After'], /^\d+$/, `${what}: Retry-After`);
  }
});
