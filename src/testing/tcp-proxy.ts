/**
 * A TCP proxy a test puts between a client and a server, so it can cut that client off (a network
 * partition: open connections dropped, new ones refused) and heal it again. The fault suite (chaos/)
 * puts one between each worker and nats-server; the test cluster (nats-cluster.ts) one on each route.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  readonly cut: boolean;
  /** Drops every connection and refuses new ones until `heal()`. */
  partition(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let cut = false;
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    get cut() {
      return cut;
    },
    partition() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    heal() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
