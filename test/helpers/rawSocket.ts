// Raw TCP exchanges, for requests no well-behaved client would send.
import { connect } from 'node:net';

export interface RawExchange {
  /** Everything the server sent, as latin1 text. */
  data: string;
  /** True when the server ended the connection (we did not destroy it). */
  closedByServer: boolean;
}

/**
 * Writes `bytes`, then collects the reply until the server closes the connection or
 * `until(data)` returns true (then the socket is destroyed by us).
 */
export function rawExchange(port: number, bytes: string | Buffer, until?: (data: string) => boolean): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let byUs = false;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      data += chunk;
      if (until?.(data) && !byUs) {
        byUs = true;
        socket.destroy();
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // A reset after the server closed is still "closed by the server".
      if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') reject(err);
    });
    socket.on('close', () => resolve({ data, closedByServer: !byUs }));
    socket.write(bytes);
  });
}

/** Counts `HTTP/1.1 ` status lines in a raw reply. */
export function countResponses(data: string): number {
  return data.split('HTTP/1.1 ').length - 1;
}
