/**
 * The operations port of a worker: `/metrics` (Prometheus text), `/healthz` (the process answers)
 * and `/readyz` (every part works: 200 "ready", or 503 with one line per reason it is not).
 *
 *   const ops = await startOpsServer({ port: 9464, registry: metrics.registry, readiness: async () => [] });
 *   await ops.close();
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { messageOf } from '../errors.ts';

export interface OpsServerOptions {
  port: number;
  /** Loopback by default: put a proxy in front to expose it. */
  host?: string;
  registry: Registry;
  /** Why the worker is not ready (empty when it is). */
  readiness: () => Promise<string[]>;
}

export interface OpsServer {
  readonly url: string;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    const answer = async () => {
      if (req.method !== 'GET') return send(405, 'text/plain', 'use GET\n');
      if (path === '/metrics') return send(200, options.registry.contentType, await options.registry.metrics());
      if (path === '/healthz') return send(200, 'text/plain', 'ok\n');
      if (path === '/readyz') {
        const reasons = await options.readiness();
        return reasons.length === 0 ? send(200, 'text/plain', 'ready\n') : send(503, 'text/plain', `not ready:\n${reasons.map((r) => `- ${r}\n`).join('')}`);
      }
      return send(404, 'text/plain', 'not found: GET /metrics, /healthz or /readyz\n');
    };
    answer().catch((err) => send(500, 'text/plain', `${messageOf(err)}\n`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
