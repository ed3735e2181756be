import { connect, createServer, type Socket } from 'node:net';

/**
 * The endpoint an app's DATABASE_URL names, in front of whichever server is
 * primary: a failover moves it (`repoint`), as a DNS name, a virtual IP or a
 * cloud's writer endpoint moves. Each client connection is piped to a new
 * connection to the target; when either end closes, so does the other.
 */
export interface TcpProxy {
  port: number;
  /** The server new connections go to; the sessions open to the old one are cut. */
  repoint(targetPort: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let target = targetPort;
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of pair) {
      socket.on('error', end);
      socket.on('close', end);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const cutAll = () => {
    for (const [client, upstream] of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    repoint(targetPort) {
      target = targetPort;
      cutAll();
    },
    close() {
      cutAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
