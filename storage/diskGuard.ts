// The disk under the embedded database (DATA_DIR): how much is free, and whether a write
// may begin. PGlite on a full disk fails a table that cannot grow with "could not extend
// file" (53100), but a WAL that cannot get its next 16 MB segment is a PANIC inside the
// WebAssembly, which spins the process's only thread for good (issue 31). So writes are
// refused while the free space is below a reserve that holds the next WAL segments with
// room for the writes already admitted: PostgreSQL never meets the full disk itself.
import { statfs } from 'node:fs/promises';
import { DiskFullError } from './errors.js';

export type DiskLevel = 'ok' | 'low' | 'full';

export interface DiskState {
  /** Bytes an unprivileged process may still write (statfs bavail × bsize). */
  freeBytes: number;
  totalBytes: number;
  /** `full`: below the reserve (writes refused); `low`: below the warning threshold. */
  level: DiskLevel;
}

export interface DiskGuardOptions {
  dir: string;
  /** Below this, writes are refused (DISK_RESERVE_BYTES). */
  reserveBytes: number;
  /** Below this (and above the reserve), the disk is `low`: a warning (DISK_WARN_BYTES). */
  warnBytes: number;
  /** How often the disk is looked at without being asked (and how old a look admit() trusts while the disk is `ok`). */
  intervalMs?: number;
  /** Told on every change of level (and once at start). */
  onChange?(state: DiskState, previous: DiskLevel | undefined): void;
  /** For tests: what statfs answers. */
  statfs?: (dir: string) => Promise<{ bavail: number; bsize: number; blocks: number }>;
}

/** A look at the disk younger than this is trusted by admit() while the disk is `ok`. */
export const DISK_FRESH_MS = 1_000;

export interface DiskGuard {
  readonly reserveBytes: number;
  readonly warnBytes: number;
  /** The last look (undefined before the first). */
  state(): DiskState | undefined;
  /** Looks now (one statfs however many ask at once). */
  refresh(): Promise<DiskState>;
  /**
   * Before a write: throws DiskFullError when the disk is below the reserve. Looks at the
   * disk again unless the last look is recent and found it `ok` (a `low` or `full` disk is
   * looked at on every write, so a freed disk takes writes at once).
   */
  admit(): Promise<void>;
  stop(): void;
}

export function levelOf(freeBytes: number, reserveBytes: number, warnBytes: number): DiskLevel {
  if (freeBytes < reserveBytes) return 'full';
  return freeBytes < warnBytes ? 'low' : 'ok';
}

export function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(bytes < 10 * 1048576 ? 1 : 0)} MiB`;
}

/** The one-line reason a write is refused (or a start), naming the folder and the figures. */
export function diskFullMessage(dir: string, freeBytes: number, reserveBytes: number): string {
  return `the disk holding ${dir} is full: ${mib(freeBytes)} free, below the ${mib(reserveBytes)} reserve (DISK_RESERVE_BYTES) the embedded database needs; free space on it`;
}

export function diskGuard(opts: DiskGuardOptions): DiskGuard {
  const look = opts.statfs ?? ((dir: string) => statfs(dir));
  const intervalMs = opts.intervalMs ?? 5_000;
  let last: DiskState | undefined;
  let lastAt = 0;
  let inFlight: Promise<DiskState> | undefined;

  const refresh = (): Promise<DiskState> =>
    (inFlight ??= (async () => {
      try {
        const s = await look(opts.dir);
        const freeBytes = s.bavail * s.bsize;
        const next: DiskState = { freeBytes, totalBytes: s.blocks * s.bsize, level: levelOf(freeBytes, opts.reserveBytes, opts.warnBytes) };
        const previous = last?.level;
        last = next;
        lastAt = performance.now();
        if (previous !== next.level) opts.onChange?.(next, previous);
        return next;
      } finally {
        inFlight = undefined;
      }
    })());

  const timer = setInterval(() => void refresh().catch(() => {}), intervalMs);
  timer.unref();

  return {
    reserveBytes: opts.reserveBytes,
    warnBytes: opts.warnBytes,
    state: () => last,
    refresh,
    async admit() {
      const fresh = last !== undefined && last.level === 'ok' && performance.now() - lastAt < Math.min(DISK_FRESH_MS, intervalMs);
      const s = fresh ? last! : await refresh();
      if (s.level === 'full') throw new DiskFullError(diskFullMessage(opts.dir, s.freeBytes, opts.reserveBytes), s.freeBytes, opts.reserveBytes);
    },
    stop: () => clearInterval(timer),
  };
}
