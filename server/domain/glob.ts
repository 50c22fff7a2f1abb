// Globs as JWT Auth's bound claims use them (picomatch's `**`, `*`, `?`), and as the
// chart tests read .dockerignore patterns (Go's filepath.Match, which means the same).

/**
 * A glob as the source of a regular expression: `**` matches anything, `*` anything but
 * `/`, `?` one character but `/`; everything else stands for itself.
 */
export function globSource(pattern: string): string {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return re;
}

/** Exact, or a glob (see globSource). */
export function globMatch(value: string, pattern: string): boolean {
  if (value === pattern) return true;
  if (!/[*?]/.test(pattern)) return false;
  return new RegExp(`^${globSource(pattern)}$`, 's').test(value);
}
