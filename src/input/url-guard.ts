/**
 * The URL guard: an image or a file part by URL must be https, to a host whose every address is
 * outside loopback, link-local, private, CGNAT, unique-local, IPv4-mapped and metadata ranges
 * (checked after resolution; a literal IP directly), whether the worker fetches it or forwards it to
 * the model server. An allowlist (hosts or CIDRs) admits the rest, over http or https. A `data:` URL
 * carries its bytes and fetches nothing. Refused at admission as invalid input naming host and range.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { Prompt } from '../events/catalog.ts';

/** Resolves a host name to its addresses (injected in tests; default: the system resolver). */
export type Resolve = (hostname: string) => Promise<string[]>;

export interface UrlOptions {
  /** Hosts (`models.internal`, `localhost`) or CIDRs (`10.1.0.0/16`, `127.0.0.1/32`, `fd00::/8`) prompts may name anyway. */
  allow?: readonly string[];
  /** How names resolve (default: the system's resolver, `DEFAULT_RESOLVE_TIMEOUT_MS` at most). */
  resolve?: Resolve;
}

export const DEFAULT_RESOLVE_TIMEOUT_MS = 5_000;

interface Range {
  name: string;
  cidr: string;
  v6: boolean;
  base: bigint;
  bits: number;
}

/** What may not be named; the first that holds an address names the refusal. */
const BLOCKED: readonly [string, string][] = [
  ['metadata', '169.254.169.254/32'],
  ['metadata', '100.100.100.200/32'],
  ['metadata', 'fd00:ec2::254/128'],
  ['this network', '0.0.0.0/8'],
  ['private', '10.0.0.0/8'],
  ['CGNAT', '100.64.0.0/10'],
  ['loopback', '127.0.0.0/8'],
  ['link-local', '169.254.0.0/16'],
  ['private', '172.16.0.0/12'],
  ['IETF protocol', '192.0.0.0/24'],
  ['private', '192.168.0.0/16'],
  ['benchmarking', '198.18.0.0/15'],
  ['multicast', '224.0.0.0/4'],
  ['reserved', '240.0.0.0/4'],
  ['unspecified', '::/128'],
  ['loopback', '::1/128'],
  ['IPv4-mapped', '::ffff:0:0/96'],
  ['IPv4-compatible', '::/96'],
  ['NAT64', '64:ff9b::/96'],
  ['NAT64', '64:ff9b:1::/48'],
  ['6to4', '2002::/16'],
  ['Teredo', '2001::/32'],
  ['discard', '100::/64'],
  ['unique-local', 'fc00::/7'],
  ['link-local', 'fe80::/10'],
  ['site-local', 'fec0::/10'],
  ['multicast', 'ff00::/8'],
];
const BLOCKED_RANGES: readonly Range[] = BLOCKED.map(([name, cidr]) => parseCidr(cidr, name)!);

/** An address as a number and its family, or undefined when it is not an IP literal. */
function parseIp(text: string): { v6: boolean; value: bigint } | undefined {
  const family = isIP(text);
  if (family === 4) return { v6: false, value: text.split('.').reduce((n, o) => (n << 8n) | BigInt(Number(o)), 0n) };
  if (family !== 6) return undefined;
  let s = text.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const v4 = parseIp(dotted[1]!)!.value;
    s = `${s.slice(0, -dotted[1]!.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return { v6: true, value: groups.reduce((n, g) => (n << 16n) | BigInt(Number.parseInt(g, 16)), 0n) };
}

function parseCidr(text: string, name: string): Range | undefined {
  const [addr, len, extra] = text.split('/');
  if (extra !== undefined || addr === undefined) return undefined;
  const ip = parseIp(addr);
  if (!ip) return undefined;
  const max = ip.v6 ? 128 : 32;
  const bits = len === undefined ? max : /^\d{1,3}$/.test(len) ? Number(len) : Number.NaN;
  if (!(bits >= 0 && bits <= max)) return undefined;
  return { name, cidr: text, v6: ip.v6, base: ip.value >> BigInt(max - bits), bits };
}

const inRange = (r: Range, ip: { v6: boolean; value: bigint }) => r.v6 === ip.v6 && ip.value >> BigInt((ip.v6 ? 128 : 32) - r.bits) === r.base;

/** The blocked range an address is in, if any (an IPv4 address inside an IPv6 one is checked as itself too). */
export function blockedRange(address: string): { name: string; cidr: string } | undefined {
  const ip = parseIp(address);
  if (!ip) return undefined;
  const hit = BLOCKED_RANGES.find((r) => inRange(r, ip));
  return hit ? { name: hit.name, cidr: hit.cidr } : undefined;
}

const HOST = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

/** The checked policy: the allowlist parsed once. A bad entry is an `invalid_option` naming it. */
export interface UrlGuard {
  readonly allow: readonly string[];
  check(prompt: Prompt): Promise<void>;
}

export function urlGuard(options: UrlOptions = {}): UrlGuard {
  const allow = [...(options.allow ?? [])];
  const hosts = new Set<string>();
  const cidrs: Range[] = [];
  for (const entry of allow) {
    const e = String(entry)
      .trim()
      .toLowerCase()
      .replace(/^\[|\]$/g, '');
    const range = parseCidr(e, 'allowed');
    if (range) cidrs.push(range);
    else if (!e.includes('/') && HOST.test(e)) hosts.add(e.replace(/\.$/, ''));
    else
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `Invalid URL allowlist entry ${JSON.stringify(entry)}: give a host name (models.internal) or an address or CIDR (10.1.0.0/16, fd00::/8).`,
      );
  }
  const resolve = options.resolve ?? systemResolve;
  const allowedIp = (address: string) => {
    const ip = parseIp(address);
    return ip !== undefined && cidrs.some((r) => inRange(r, ip));
  };
  return {
    allow,
    async check(prompt) {
      if (typeof prompt === 'string') return;
      // the parts' hosts resolve together (each at most DEFAULT_RESOLVE_TIMEOUT_MS), once per host
      const lookups = new Map<string, Promise<string[]>>();
      const checks = prompt.flatMap((part, i) => ('url' in part && typeof part.url === 'string' ? [checkUrl(part.url, `prompt part ${i}`, lookups)] : []));
      const results = await Promise.allSettled(checks);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };

  async function checkUrl(text: string, where: string, lookups: Map<string, Promise<string[]>>): Promise<void> {
    if (/^data:/i.test(text)) return;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw refused(`${where}'s URL ${shown(text)} is not a URL`);
    }
    const host = url.hostname
      .toLowerCase()
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, '');
    const literal = isIP(host) !== 0;
    const listed = hosts.has(host) || (literal && allowedIp(host));
    if (url.protocol !== 'https:' && !(listed && url.protocol === 'http:'))
      throw refused(
        `${where}'s URL ${shown(text)} is ${url.protocol.replace(/:$/, '')}: a URL in a prompt must be https (or name a host the URL allowlist holds)`,
      );
    if (listed) return;
    if (literal) return blocked(where, host, host);
    if (host === 'localhost' || host.endsWith('.localhost'))
      throw refused(`${where}'s URL host ${host} is loopback: name a public https host, or allow it (--allow-url-host)`);
    let addresses: string[];
    try {
      let lookup = lookups.get(host);
      if (!lookup) lookups.set(host, (lookup = resolve(host)));
      addresses = await lookup;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw refused(
        `${where}'s URL host ${host} did not resolve (${typeof code === 'string' ? code : (err as Error).message}): name a host that resolves to public addresses, or allow it (--allow-url-host)`,
      );
    }
    if (addresses.length === 0) throw refused(`${where}'s URL host ${host} resolves to no address`);
    for (const address of addresses) if (!allowedIp(address)) blocked(where, host, address);
  }
}

function blocked(where: string, host: string, address: string): void {
  const range = blockedRange(address);
  if (!range) return;
  const via = address === host ? '' : ` (it resolves to ${address})`;
  throw refused(
    `${where}'s URL host ${host}${via} is in the ${range.name} range ${range.cidr}: a prompt may only name public hosts; allow it (--allow-url-host, or the urls.allow option) if a model should fetch it`,
  );
}

const shown = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text);

function refused(why: string): SessiondError {
  return new SessiondError(ErrorCode.InvalidOption, `Invalid input: ${why}.`);
}

async function systemResolve(hostname: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('timed out'), { code: 'ETIMEOUT' })), DEFAULT_RESOLVE_TIMEOUT_MS);
  });
  try {
    const found = await Promise.race([lookup(hostname, { all: true, verbatim: true }), timeout]);
    return found.map((a) => a.address);
  } finally {
    clearTimeout(timer);
  }
}
