// Secret paths are normalised once, here: absolute, no empty, '.' or '..' segments,
// no trailing slash. Anything else is refused rather than "fixed", so a path can never
// reach another folder than the one it names.
import { AppError } from '../errors.js';

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
const MAX_DEPTH = 20;

export function normaliseSecretPath(input: string | undefined | null): string {
  if (input === undefined || input === null || input === '') return '/';
  if (input.length > 1024 || !input.startsWith('/')) {
    throw new AppError('VALIDATION', 'secretPath must be an absolute path such as / or /my-app');
  }
  const trimmed = input.length > 1 && input.endsWith('/') ? input.slice(0, -1) : input;
  if (trimmed === '/') return '/';
  const segments = trimmed.slice(1).split('/');
  if (segments.length > MAX_DEPTH) throw new AppError('VALIDATION', `secretPath is deeper than ${MAX_DEPTH} folders`);
  for (const s of segments) {
    if (!SEGMENT.test(s) || s === '.' || s === '..') {
      throw new AppError('VALIDATION', 'secretPath has an invalid folder name (letters, digits, _ . - only)');
    }
  }
  return `/${segments.join('/')}`;
}
