// npm run bench:hsm — the cost of a cold data-key unwrap (a data key not yet in the
// worker's cache: the first request for a project after start or eviction), with the
// root key local (HKDF-derived, in the worker) and in a PKCS#11 token (SoftHSM2, a
// software token in this process: a network HSM adds its round trip on top).
//
// Through the service's own path: createCrypto, one worker, one task per unwrap
// (openMany with no items unwraps the key and returns). "warm" repeats one key (a
// cache hit), so cold - warm is the provider's share.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createCrypto, type Crypto, type RootKeySpec } from '../crypto/index.js';
import { softToken, SOFTHSM_MODULE } from '../test/helpers/softhsm.js';

const N = Number(process.env.BENCH_HSM_KEYS ?? 1000); // below the worker cache's 1024: every first use is a miss

interface Figures { provider: string; coldMedianUs: number; coldP99Us: number; coldPerSec: number; warmMedianUs: number; wrapMedianUs: number }

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function measure(name: string, spec: RootKeySpec): Promise<Figures> {
  const c: Crypto = await createCrypto({ rootKeys: [spec], threads: 1 });
  try {
    const wrapTimes: number[] = [];
    const wrapped: Buffer[] = [];
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      wrapped.push(await c.generateDataKey(`project:${i}`));
      wrapTimes.push(performance.now() - t0);
    }
    // A fresh pool: nothing cached.
    await c.close();
    const fresh = spec.provider === 'pkcs11' ? { ...spec, pin: Buffer.from(pinOf) } : spec;
    const d = await createCrypto({ rootKeys: [fresh], threads: 1 });
    try {
      const cold: number[] = [];
      const start = performance.now();
      for (let i = 0; i < N; i++) {
        const t0 = performance.now();
        await d.openMany(wrapped[i]!, `project:${i}`, []);
        cold.push(performance.now() - t0);
      }
      const coldTotal = performance.now() - start;
      const warm: number[] = [];
      for (let i = 0; i < N; i++) {
        const t0 = performance.now();
        await d.openMany(wrapped[0]!, 'project:0', []);
        warm.push(performance.now() - t0);
      }
      return {
        provider: name,
        coldMedianUs: Math.round(pct(cold, 0.5) * 1000),
        coldP99Us: Math.round(pct(cold, 0.99) * 1000),
        coldPerSec: Math.round(N / (coldTotal / 1000)),
        warmMedianUs: Math.round(pct(warm, 0.5) * 1000),
        wrapMedianUs: Math.round(pct(wrapTimes, 0.5) * 1000),
      };
    } finally {
      await d.close();
    }
  } finally {
    await c.close();
  }
}

let pinOf = '';

async function main() {
  const rows: Figures[] = [];
  rows.push(await measure('local', { provider: 'local', version: 1, keyHex: randomBytes(16).toString('hex') }));
  if (existsSync(SOFTHSM_MODULE)) {
    const tok = softToken({ teardown() {} });
    pinOf = tok.pin;
    rows.push(await measure('pkcs11 (SoftHSM2)', { provider: 'pkcs11', version: 1, module: tok.module, tokenLabel: tok.tokenLabel, keyLabel: tok.keyLabel, pin: Buffer.from(tok.pin) }));
  } else {
    console.error(`SoftHSM2 not installed (${SOFTHSM_MODULE}): local only`);
  }
  console.log(`cold data-key unwrap, ${N} distinct keys, one worker (µs per call, through createCrypto)`);
  console.log('provider            cold median  cold p99  cold/s  warm median  wrap (new key) median');
  for (const r of rows) {
    console.log(
      `${r.provider.padEnd(20)}${String(r.coldMedianUs).padStart(11)}${String(r.coldP99Us).padStart(10)}${String(r.coldPerSec).padStart(8)}` +
        `${String(r.warmMedianUs).padStart(13)}${String(r.wrapMedianUs).padStart(23)}`,
    );
  }
}

await main();
