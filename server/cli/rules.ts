// Value rules of the inventory and their generators. Randomness: node:crypto only
// (randomBytes, and randomInt, which draws without modulo bias).
import { randomBytes, randomInt } from 'node:crypto';

export const RULES = ['hex64', 'hex24', 'password', 'external'] as const;
export type Rule = (typeof RULES)[number];

export const DEFAULT_PLACEHOLDER = 'CHANGE_ME_issued_elsewhere';

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
/**
 * RFC 3986 "unreserved" symbols (- . _ ~: never percent-encoded anywhere in a URL) and
 * the sub-delimiters ! + , = (literal in a URL's user-info and path). None of them is
 * special to a shell word or an env file (no quote, $, `, \, #, space, ;, &, |, <, >,
 * *, ?, (, )), so the password can be pasted unquoted into KEY=value lines and into
 * postgres://user:password@host URLs. Not for x-www-form-urlencoded bodies, where +
 * means a space.
 */
export const PASSWORD_SYMBOLS = '-._~!+,=';
export const PASSWORD_ALPHABET = UPPER + LOWER + DIGITS + PASSWORD_SYMBOLS; // 70 characters
export const PASSWORD_LENGTH = 32; // 32 x log2(70) = 196 bits

const CLASSES = [UPPER, LOWER, DIGITS, PASSWORD_SYMBOLS];
const ALNUM = /^[A-Za-z0-9]$/;

/** True when `p` could have come from `password()`. */
export function isStrongPassword(p: string): boolean {
  return (
    p.length === PASSWORD_LENGTH &&
    [...p].every((c) => PASSWORD_ALPHABET.includes(c)) &&
    CLASSES.every((cls) => [...p].some((c) => cls.includes(c))) &&
    ALNUM.test(p[0]!) &&
    ALNUM.test(p[p.length - 1]!)
  );
}

/**
 * 32 characters drawn uniformly from the 70-character alphabet; drawn again until it
 * has one of each class and starts and ends with a letter or digit (so it never looks
 * like a command-line flag and a trailing symbol is never lost to a sloppy copy).
 * Rejection keeps the result uniform over every password that satisfies the rules.
 */
export function password(): string {
  for (;;) {
    let p = '';
    for (let i = 0; i < PASSWORD_LENGTH; i++) p += PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)];
    if (isStrongPassword(p)) return p;
  }
}

export const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

/** The value to store for `rule`; for `external`, the placeholder. */
export function generate(rule: Rule, placeholder = DEFAULT_PLACEHOLDER): string {
  switch (rule) {
    case 'hex64':
      return hex(32);
    case 'hex24':
      return hex(12);
    case 'password':
      return password();
    case 'external':
      return placeholder;
  }
}

export const RULE_DESCRIPTIONS: Record<Rule, string> = {
  hex64: '64 hex characters (32 random bytes)',
  hex24: '24 hex characters (12 random bytes)',
  password: `${PASSWORD_LENGTH} characters from A-Z a-z 0-9 and ${PASSWORD_SYMBOLS}, at least one of each`,
  external: 'issued elsewhere: a placeholder is stored until the real value is set',
};
