/** The URL guard: https to public hosts only, after resolution (an injected resolver), an allowlist for the rest. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { blockedRange, urlGuard, type Resolve } from '../../src/input/url-guard.ts';
import { ErrorKind, isSessiondError } from '../../src/errors.ts';
import type { Prompt } from '../../src/events/catalog.ts';

const names: Record<string, string[]> = {
  'cdn.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'sneaky.example': ['93.184.215.14', '10.0.0.7'],
  'metadata.example': ['169.254.169.254'],
  'mapped.example': ['::ffff:127.0.0.1'],
};
const resolve: Resolve = async (host) => {
  const found = names[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};
const image = (url: string): Prompt => [
  { type: 'text', text: 'look' },
  { type: 'image', url },
];

async function refusal(url: string, allow: string[] = []): Promise<string> {
  try {
    await urlGuard({ allow, resolve }).check(image(url));
  } catch (err) {
    assert.ok(isSessiondError(err));
    assert.is(err.kind, ErrorKind.InvalidInput, url);
    return err.message;
  }
  throw new Error(`accepted ${url}`);
}

test('url guard - https to public hosts, data URLs and string prompts pass', async () => {
  const guard = urlGuard({ resolve });
  await guard.check('just text');
  await guard.check(image('https://cdn.example/cat.png'));
  await guard.check(image('https://93.184.215.14/cat.png'));
  await guard.check(image('https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/cat.png'));
  await guard.check(image('data:image/png;base64,AAAA'));
  await guard.check([{ type: 'file', url: 'https://cdn.example/a.pdf', mediaType: 'application/pdf' }]);
});

test('url guard - literal addresses in internal ranges are refused naming the host and the range', async () => {
  for (const [url, range] of [
    ['https://127.0.0.1/x.png', 'loopback range 127.0.0.0/8'],
    ['https://2130706433/x.png', 'loopback range 127.0.0.0/8'], // the URL parser makes it 127.0.0.1
    ['https://0x7f.1/x.png', 'loopback range 127.0.0.0/8'],
    ['https://169.254.169.254/latest/meta-data/', 'metadata range 169.254.169.254/32'],
    ['https://169.254.1.1/', 'link-local range 169.254.0.0/16'],
    ['https://10.1.2.3/', 'private range 10.0.0.0/8'],
    ['https://172.20.0.1/', 'private range 172.16.0.0/12'],
    ['https://192.168.1.1/', 'private range 192.168.0.0/16'],
    ['https://100.64.0.1/', 'CGNAT range 100.64.0.0/10'],
    ['https://0.0.0.0/', 'this network range 0.0.0.0/8'],
    ['https://[::1]/', 'loopback range ::1/128'],
    ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped range ::ffff:0:0/96'],
    ['https://[::ffff:7f00:1]/', 'IPv4-mapped range ::ffff:0:0/96'],
    ['https://[fd00::1]/', 'unique-local range fc00::/7'],
    ['https://[fd00:ec2::254]/', 'metadata range fd00:ec2::254/128'],
    ['https://[fe80::1]/', 'link-local range fe80::/10'],
  ] as const) {
    const message = await refusal(url);
    assert.match(message, range, url);
    assert.match(message, 'prompt part 1', url);
  }
});

test('url guard - names are checked after resolution: every address must be public', async () => {
  assert.match(await refusal('https://sneaky.example/x.png'), 'sneaky.example (it resolves to 10.0.0.7) is in the private range');
  assert.match(await refusal('https://metadata.example/'), 'metadata range');
  assert.match(await refusal('https://mapped.example/'), 'IPv4-mapped');
  assert.match(await refusal('https://localhost/'), 'localhost is loopback');
  assert.match(await refusal('https://app.localhost/'), 'is loopback');
  assert.match(await refusal('https://nowhere.example/'), 'nowhere.example did not resolve (ENOTFOUND)');
});

test('url guard - http is refused, even to a public host', async () => {
  assert.match(await refusal('http://cdn.example/cat.png'), 'is http: a URL in a prompt must be https');
});

test('url guard - the allowlist admits hosts and CIDRs (http too) without resolving them', async () => {
  await urlGuard({ allow: ['127.0.0.1'], resolve }).check(image('http://127.0.0.1:8080/x.png'));
  await urlGuard({ allow: ['10.0.0.0/8'], resolve }).check(image('https://sneaky.example/x.png'));
  await urlGuard({ allow: ['models.internal'], resolve }).check(image('http://models.internal/x.png'));
  await urlGuard({ allow: ['fd00::/8'], resolve }).check(image('https://[fd00::1]/x.png'));
  await urlGuard({ allow: ['localhost'], resolve }).check(image('http://localhost:9/x.png'));
  // one allowed range does not allow another
  assert.match(await refusal('https://127.0.0.1/x.png', ['10.0.0.0/8']), 'loopback');
  assert.match(await refusal('http://cdn.example/x.png', ['127.0.0.1']), 'must be https');
});

test('url guard - a bad allowlist entry is refused naming it', () => {
  for (const bad of ['10.0.0.0/33', 'not a host!', '1.2.3.4/8/9', 'fd00::/129']) {
    assert.throws(
      () => urlGuard({ allow: [bad] }),
      (err: Error) => err.message.includes(JSON.stringify(bad)),
      bad,
    );
  }
});

test('url guard - a prompt of many parts resolves each host once, all together, and names the first part refused', async () => {
  const asked: string[] = [];
  let inFlight = 0;
  let most = 0;
  const counting: Resolve = async (host) => {
    asked.push(host);
    most = Math.max(most, ++inFlight);
    await new Promise((r) => setImmediate(r));
    inFlight--;
    return resolve(host);
  };
  const prompt: Prompt = [
    ...Array.from({ length: 10 }, () => ({ type: 'image' as const, url: 'https://cdn.example/a.png' })),
    { type: 'image', url: 'https://sneaky.example/b.png' },
    { type: 'image', url: 'https://metadata.example/c.png' },
  ];
  try {
    await urlGuard({ resolve: counting }).check(prompt);
    assert.unreachable('accepted');
  } catch (err) {
    assert.match((err as Error).message, 'prompt part 10');
  }
  assert.equal(asked.sort(), ['cdn.example', 'metadata.example', 'sneaky.example']);
  assert.is(most, 3, 'looked up together');
});

test('url guard - blockedRange leaves public addresses alone', () => {
  for (const a of ['93.184.215.14', '8.8.8.8', '203.0.113.10', '2606:4700::1111', '1.1.1.1']) assert.is(blockedRange(a), undefined, a);
  assert.is(blockedRange('172.32.0.1'), undefined, 'just past 172.16.0.0/12');
  assert.is(blockedRange('100.128.0.1'), undefined, 'just past 100.64.0.0/10');
  assert.is(blockedRange('::ffff:8.8.8.8')?.name, 'IPv4-mapped');
});

test.run();
