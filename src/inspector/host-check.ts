/**
 * The inspector's guard against DNS rebinding and cross-site writes: a request is answered only when
 * its Host is an address the inspector is bound to (or one of `extraHosts`), and one other than GET or
 * HEAD only from the same origin (why: docs/inspector.md#errors-and-the-host-check).
 */
import type { IncomingMessage } from 'node:http';
import { networkInterfaces } from 'node:os';
import { boundText } from '../errors.ts';

export interface Refusal {
  status: 421 | 403;
  message: string;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const WILDCARDS = new Set(['0.0.0.0', '::', '[::]', '']);
const SHOWN_HOST_CHARS = 100;

/** A host (no port) as it appears in a Host header: IPv6 addresses in brackets, lower case, no trailing dot. */
function hostToken(host: string): string {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h.includes(':') && !h.startsWith('[') ? `[${h}]` : h;
}

/** A Host header value (or an allowedHosts entry) compared as `name[:port]`, normalised like hostToken. */
function hostAndPort(value: string): { name: string; port: string | undefined } {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(value.trim());
  return m ? { name: hostToken(m[1]!), port: m[2] || undefined } : { name: hostToken(value.trim()), port: undefined };
}

function isLoopback(host: string): boolean {
  const h = hostToken(host);
  return h === 'localhost' || h === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** The Host values (`name:port`) a server bound to `host`:`port` answers. */
export function allowedHosts(host: string, port: number, extraHosts: readonly string[] = []): Set<string> {
  const names = new Set<string>([hostToken(host)]);
  if (isLoopback(host) || WILDCARDS.has(hostToken(host))) for (const n of LOOPBACK_NAMES) names.add(n);
  if (WILDCARDS.has(hostToken(host))) {
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) names.add(hostToken(a.address.replace(/%.*$/, '')));
  }
  const allowed = new Set<string>();
  for (const n of names) {
    if (n === '') continue; // a wildcard bind's own address (0.0.0.0:PORT, [::]:PORT) stays: the printed url uses it
    allowed.add(`${n}:${port}`);
    if (port === 80) allowed.add(n);
  }
  for (const extra of extraHosts) {
    const h = hostAndPort(extra); // name, name:port, an IPv6 address, [v6] or [v6]:port
    allowed.add(`${h.name}:${h.port ?? port}`);
  }
  return allowed;
}

/** The check for a server bound to `host`:`port`: a refusal for a foreign Host or a cross-origin write, or undefined. */
export function hostGuard(options: { host: string; port: number; extraHosts?: readonly string[] }): (req: IncomingMessage) => Refusal | undefined {
  const allowed = allowedHosts(options.host, options.port, options.extraHosts);
  const example = [...allowed][0] ?? `127.0.0.1:${options.port}`;
  return (req) => {
    const raw = req.headers.host;
    if (raw === undefined) return undefined; // not from a browser (HTTP/1.0 without Host): nothing to rebind
    const { name, port } = hostAndPort(raw);
    const host = port === undefined ? name : `${name}:${port}`;
    if (!allowed.has(host)) {
      return {
        status: 421,
        message:
          `Refused: this inspector answers requests for ${[...allowed].join(', ')}, not for host ${JSON.stringify(boundText(raw, SHOWN_HOST_CHARS))}. ` +
          `Open http://${example}/ (a page on another site that points its name at this machine must not read the sessions).\n`,
      };
    }
    if (req.method === 'GET' || req.method === 'HEAD') return undefined;
    const origin = req.headers.origin;
    if (origin !== undefined && origin.toLowerCase() !== `http://${host}`) {
      return {
        status: 403,
        message: `Refused: a ${boundText(req.method ?? '', 20)} request from origin ${JSON.stringify(boundText(origin, SHOWN_HOST_CHARS))}; the inspector takes requests other than GET and HEAD only from its own pages (http://${host}).\n`,
      };
    }
    return undefined;
  };
}
