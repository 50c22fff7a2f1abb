// Minimal typings for the parts of autocannon 8 the bench uses (it ships none).
declare module 'autocannon' {
  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total: number;
    p2_5: number;
    p50: number;
    p75: number;
    p90: number;
    p97_5: number;
    p99: number;
    p99_9: number;
  }

  export interface RequestSpec {
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    /** A function, or (workers mode) the absolute path of a CommonJS module exporting one. */
    setupRequest?: string | ((req: RequestSpec, context: Record<string, unknown>) => RequestSpec | undefined);
    onResponse?: string | ((status: number, body: string, context: Record<string, unknown>, headers: Record<string, string>) => void);
  }

  export interface Options {
    url: string;
    title?: string;
    connections?: number;
    duration?: number;
    workers?: number;
    pipelining?: number;
    timeout?: number;
    method?: RequestSpec['method'];
    headers?: Record<string, string>;
    body?: string;
    requests?: RequestSpec[];
    initialContext?: Record<string, unknown>;
    expectBody?: string;
    /** Requests per second across all connections (a fixed offered load). */
    overallRate?: number;
  }

  export interface Result {
    title?: string;
    url: string;
    duration: number;
    connections: number;
    errors: number;
    timeouts: number;
    mismatches: number;
    non2xx: number;
    resets: number;
    '2xx': number;
    '4xx': number;
    '5xx': number;
    statusCodeStats: Record<string, { count: number }>;
    latency: Histogram & { totalCount: number };
    requests: Histogram & { sent: number };
    throughput: Histogram;
    start: Date;
    finish: Date;
  }

  function autocannon(opts: Options): Promise<Result> & { stop(): void };
  export default autocannon;
}
