// Loads the native uWebSockets.js binary directly, after checking its sha256 against a
// pinned value. The package's JS entry (src/uws.js) is never loaded: it silently falls
// back to a node:http + ws@8.13.0 re-implementation when the native module fails to load
// or when UWS_USE_FALLBACK is set, and this service must never run on that.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';

export type Uws = typeof UWS;

/**
 * sha256 of every native binary this service accepts, by file name.
 * Package: uWebSockets.js = npm:@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0.
 * Re-verify (and extend) on any version bump.
 */
export const PINNED_BINARIES: Readonly<Record<string, string>> = Object.freeze({
  'uws_linux_x64_115.node': 'f158fb441f7e2e37b3ab9a56782fe37f4c0d33b5cd32e96ee5c0120ce7db7ced',
  // linux-arm64 (Raspberry Pi 4/5 with a 64-bit OS, Graviton, Ampere): the file the same
  // package tarball ships (ELF aarch64; its integrity is pinned by the lockfile).
  'uws_linux_arm64_115.node': 'fa46518766a985c6a79daef039f40cccd8e98e9a288f2ceaf31a0a18901bbfd5',
});

/** The binary name for this platform, as the package names its files. */
export function binaryName(
  platform: string = process.platform,
  arch: string = process.arch,
  modules: string = process.versions.modules,
): string {
  return `uws_${platform}_${arch}_${modules}.node`;
}

/**
 * Reads `path` and checks its sha256 against `expectedSha256` (hex). Throws an Error
 * with a clear message when the file is missing or does not match; returns the digest.
 */
export function verifyBinary(path: string, expectedSha256: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new Error(`uWebSockets.js native binary missing or unreadable at ${path}: ${(err as Error).message}`);
  }
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (actual !== expectedSha256.toLowerCase()) {
    throw new Error(
      `uWebSockets.js native binary ${path} has sha256 ${actual}, expected ${expectedSha256}; refusing to start`,
    );
  }
  return actual;
}

/** Resolves, verifies and loads the native module. Throws (the service refuses to start) on any failure. */
export function loadUws(): Uws {
  const name = binaryName();
  const expected = PINNED_BINARIES[name];
  if (expected === undefined) {
    throw new Error(
      `No pinned uWebSockets.js binary for ${process.platform}-${process.arch} (Node ABI ${process.versions.modules}); refusing to start`,
    );
  }
  const require = createRequire(import.meta.url);
  let path: string;
  try {
    path = require.resolve(`uWebSockets.js/binaries/${name}`);
  } catch (err) {
    throw new Error(`uWebSockets.js native binary ${name} not found: ${(err as Error).message}`);
  }
  verifyBinary(path, expected);
  // require() of a .node path goes straight to process.dlopen: no JS loader, no fallback.
  return require(path) as Uws;
}

export const uws: Uws = loadUws();
