// A Redis of the test's own, on a free port, that the test can kill, restart, freeze
// and cut off (the shared one on 6379 is never touched), and a TCP proxy that cuts one
// client off while the others stay connected.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';

interface TapLike {
  teardown(fn: () => unknown): void;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export class TestRedis {
  private child: ChildProcess | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Resolves once the server says it accepts connections. */
  async start(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (/Ready to accept connections/.test(out)) resolve();
      });
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
    });
  }

  /** Killed outright, as a crashed or evicted Redis. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.child = undefined;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGCONT'); // a frozen process must be able to die
    child.kill('SIGKILL');
    await exited;
  }

  /** Frozen: connections stay open, nothing is answered (a hung Redis). */
  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.child?.kill('SIGCONT');
  }
}

/** A started Redis on a free port, killed when the test ends. */
export async function testRedis(t: TapLike): Promise<TestRedis> {
  const redis = new TestRedis(await freePort());
  t.teardown(() => redis.stop());
  await redis.start();
  return redis;
}

/** Forwards to `port`; cut() drops every connection and refuses new ones until restore(). */
export class CuttableProxy {
  private readonly sockets = new Set<Socket>();
  private cutOff = false;
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async open(t: TapLike, targetPort: number): Promise<CuttableProxy> {
    let proxy!: CuttableProxy;
    const server = createServer((client) => {
      if (proxy.cutOff) return void client.destroy();
      const upstream = connect(targetPort, '127.0.0.1');
      for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
        proxy.sockets.add(a);
        a.on('error', () => b.destroy());
        a.on('close', () => (proxy.sockets.delete(a), b.destroy()));
        a.pipe(b);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    proxy = new CuttableProxy(server, (server.address() as { port: number }).port);
    t.teardown(() => proxy.close());
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  cut(): void {
    this.cutOff = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.cutOff = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Resolves when the bus's link is (or becomes) `live`: its resets fire on every change. */
export function linkIs(bus: { live: boolean; onReset(h: () => void): void }, live: boolean): Promise<void> {
  return new Promise((resolve) => {
    if (bus.live === live) return resolve();
    bus.onReset(() => bus.live === live && resolve());
  });
}
