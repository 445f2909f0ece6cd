import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseTokens } from '../../src/gateway/tokens.ts';

const SECRET = 'a-long-random-token-0001';
const table = (entry: Record<string, unknown>) => parseTokens(JSON.stringify({ tokens: [{ name: 'app', token: SECRET, ...entry }] }), 'tokens.json');

test('tokens - an entry without scopes gets read, prompt and manage: never approve or admin', () => {
  const grant = table({ sessions: 'ses_web_' }).find(SECRET)!;
  assert.equal([...grant.scopes].sort(), ['manage', 'prompt', 'read']);
});

test('tokens - scopes, tenant and expiry are read from the entry', () => {
  const grant = table({ tenant: 'acme', scopes: ['read', 'approve'], expires: '2027-01-01T00:00:00Z' }).find(SECRET)!;
  assert.equal([...grant.scopes].sort(), ['approve', 'read']);
  assert.is(grant.tenant, 'acme');
  assert.is(grant.expiresAt, Date.parse('2027-01-01T00:00:00Z'));
});

test('tokens - an unknown scope, a bad tenant or a bad expiry is refused, naming the entry and the field', () => {
  assert.throws(
    () => table({ sessions: '*', scopes: ['read', 'approv'] }),
    /tokens\[0\]\.scopes: unknown scope "approv" \(known: read, prompt, approve, manage, admin\)/,
  );
  assert.throws(() => table({ sessions: '*', scopes: [] }), /tokens\[0\]\.scopes: expected a non-empty list/);
  assert.throws(() => table({ tenant: 'a.b' }), /tokens\[0\]\.tenant must be/);
  assert.throws(() => table({ sessions: '*', expires: 'tomorrow' }), /tokens\[0\]\.expires must be an ISO time/);
});

test.run();
