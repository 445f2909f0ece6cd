/**
 * Signed tokens (jwt.ts) over real HTTP: RS256 and ES256 tokens from a local JWKS file are
 * accepted, with their reach and scopes from the claims; `none`, HS256 signed with the public key,
 * an unknown key, expired, not yet valid, a wrong issuer or audience, and an unknown static token
 * all get the same 401 body. A JWKS file that changes is read again; one that does not parse is
 * refused at start with what was wrong, and keeps the keys it had when it breaks later. A static
 * token past its `expires` gets the same 401.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac, createPublicKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { jwtVerifier, type JwtVerifier } from '../../src/gateway/jwt.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import { ManualClock } from '../../src/clock.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const NOW = Date.parse('2026-06-01T12:00:00Z');
const clock = new ManualClock(NOW);
const STATIC = 'static-token-0123456789abcdef';
let sessiond: Sessiond;
let gw: Gateway;
let jwt: JwtVerifier;
// biome-ignore lint/suspicious/noExplicitAny: key objects from jose
let rsa: { privateKey: any; publicKey: any };
// biome-ignore lint/suspicious/noExplicitAny: key objects from jose
let ec: { privateKey: any; publicKey: any };
let rsaJwk: JWK;
const jwksFile = tmp.file('jwks.json');
const sec = (ms: number) => Math.floor(ms / 1000);

test.before(async () => {
  rsa = await generateKeyPair('RS256', { extractable: true });
  ec = await generateKeyPair('ES256', { extractable: true });
  rsaJwk = { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256' };
  writeFileSync(jwksFile, JSON.stringify({ keys: [rsaJwk, { ...(await exportJWK(ec.publicKey)), kid: 'ec-1', alg: 'ES256' }] }));
  sessiond = await startSessiond({ db: tmp.file('jwt.db'), runner: echoRunner({ steps: 1 }) });
  jwt = jwtVerifier({ jwks: jwksFile, issuer: 'https://idp.example', audience: 'sessiond', clock, pollMs: 50 });
  gw = await startGateway({
    sessions: sessiond,
    port: 0,
    clock,
    jwt,
    tokens: parseTokens(JSON.stringify({ tokens: [{ name: 'old', token: STATIC, sessions: '*', expires: new Date(NOW + 60_000).toISOString() }] }), 'test'),
  });
});

test.after(async () => {
  await gw?.close();
  await sessiond?.close();
  tmp.remove();
});

interface Claims {
  [k: string]: unknown;
}
const base = (): Claims => ({ sub: 'alice@example.com', scope: 'openid read prompt', sessiond_sessions: 'ses_jwt_' });

async function sign(alg: 'RS256' | 'ES256', claims: Claims = base(), edit: (j: SignJWT) => SignJWT = (j) => j): Promise<string> {
  const j = new SignJWT(claims)
    .setProtectedHeader({ alg, kid: alg === 'RS256' ? 'rsa-1' : 'ec-1' })
    .setIssuer('https://idp.example')
    .setAudience('sessiond')
    .setIssuedAt(sec(NOW))
    .setExpirationTime(sec(NOW) + 600);
  return edit(j).sign(alg === 'RS256' ? rsa.privateKey : ec.privateKey);
}

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

async function get(path: string, token: string) {
  const res = await fetch(new URL(path, gw.url), { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, text: await res.text() };
}

test('RS256 and ES256 tokens are accepted: reach and scopes from the claims, unknown scopes (openid) ignored', async () => {
  for (const alg of ['RS256', 'ES256'] as const) {
    const token = await sign(alg);
    const admitted = await fetch(new URL('/v1/sessions/ses_jwt_1/inputs', gw.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'hi', id: 'inp_1' }),
    });
    assert.is(admitted.status, 200, `${alg}: ${await admitted.text()}`);
    assert.is((await get('/v1/sessions/ses_jwt_1', token)).status, 200, alg);
    const outside = await get('/v1/sessions/ses_other', token);
    assert.is(outside.status, 404, `${alg}: outside its sessiond_sessions prefix`);
    const tags = await fetch(new URL('/v1/sessions/ses_jwt_1/tags', gw.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tags: { a: 'b' } }),
    });
    assert.is(tags.status, 403, `${alg}: no manage scope in the claim`);
    assert.match(await tags.text(), 'Token alice@example.com lacks scope manage');
  }
});

test('none, HS256 with the public key, unknown key, expired, not yet valid, wrong issuer or audience, no reach, unknown static token: one 401 body', async () => {
  const unknown = await get('/v1/sessions', 'not-a-token-anyone-issued-0000');
  assert.is(unknown.status, 401);
  const header = (alg: string) => b64({ alg, kid: 'rsa-1', typ: 'JWT' });
  const body = b64({ ...base(), iss: 'https://idp.example', aud: 'sessiond', exp: sec(NOW) + 600 });
  const pem = createPublicKey({ key: rsaJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
  const hs = createHmac('sha256', pem)
    .update(`${header('HS256')}.${body}`)
    .digest('base64url');
  const other = await generateKeyPair('RS256');
  const forged: Record<string, string> = {
    none: `${header('none')}.${body}.`,
    'HS256 with the public key': `${header('HS256')}.${body}.${hs}`,
    'signed by another key': await new SignJWT(base())
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' })
      .setIssuer('https://idp.example')
      .setAudience('sessiond')
      .setExpirationTime(sec(NOW) + 600)
      .sign(other.privateKey),
    expired: await sign('RS256', base(), (j) => j.setExpirationTime(sec(NOW) - 120)),
    'not yet valid': await sign('ES256', base(), (j) => j.setNotBefore(sec(NOW) + 120)),
    'wrong issuer': await sign('RS256', base(), (j) => j.setIssuer('https://evil.example')),
    'wrong audience': await sign('RS256', base(), (j) => j.setAudience('someone-else')),
    'no exp': await new SignJWT(base())
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' })
      .setIssuer('https://idp.example')
      .setAudience('sessiond')
      .sign(rsa.privateKey),
    'no sessiond scope': await sign('RS256', { ...base(), scope: 'openid email' }),
    'no reach claim': await sign('RS256', { sub: 'bob', scope: 'read' }),
  };
  for (const [what, token] of Object.entries(forged)) {
    const r = await get('/v1/sessions', token);
    assert.equal([r.status, r.text], [401, unknown.text], what);
  }
  assert.ok((await get('/v1/sessions', await sign('RS256', base(), (j) => j.setExpirationTime(sec(NOW) - 10)))).status === 200, 'within the clock tolerance');
});

test('the operator is told why a JWT was refused (the caller is not): the algorithm, the time, the claims', async () => {
  const why: string[] = [];
  const v = jwtVerifier({ jwks: jwksFile, issuer: 'https://idp.example', audience: 'sessiond', clock, onRefused: (w) => why.push(w) });
  try {
    const header = b64({ alg: 'HS256', kid: 'rsa-1', typ: 'JWT' });
    assert.is(await v.verify(`${header}.${b64({ ...base(), exp: sec(NOW) + 600 })}.c2ln`), undefined);
    assert.is(await v.verify(await sign('RS256', base(), (j) => j.setExpirationTime(sec(NOW) - 120))), undefined);
    assert.is(await v.verify(await sign('RS256', { ...base(), scope: 'openid' })), undefined);
    assert.is(await v.verify('not-a-jwt-at-all-0123456789'), undefined);
    assert.equal(why.length, 3, JSON.stringify(why));
    assert.match(why[0]!, /alg/i);
    assert.match(why[1]!, /exp/i);
    assert.match(why[2]!, 'no sessiond scope in claim scope');
  } finally {
    v.close();
  }
});

test('a static token past its expires gets the same 401 as an unknown one', async () => {
  assert.is((await get('/v1/sessions', STATIC)).status, 200);
  clock.set(NOW + 60_000);
  const expired = await get('/v1/sessions', STATIC);
  const unknown = await get('/v1/sessions', 'not-a-token-anyone-issued-0000');
  assert.equal([expired.status, expired.text], [401, unknown.text]);
  clock.set(NOW);
});

test('a JWKS file is read again when it changes (a removed key stops verifying); one that breaks keeps the keys it had', async () => {
  const token = await sign('ES256');
  assert.is((await get('/v1/sessions', token)).status, 200);
  writeFileSync(jwksFile, '{"keys": [');
  const still = await sign('RS256');
  assert.is((await get('/v1/sessions', still)).status, 200, 'a JWKS that does not parse keeps the old keys');
  writeFileSync(jwksFile, JSON.stringify({ keys: [rsaJwk] }));
  await waitFor(async () => (await get('/v1/sessions', token)).status === 401, { timeoutMs: 10_000, what: 'the EC key to stop verifying' });
  assert.is((await get('/v1/sessions', still)).status, 200);
});

test('a JWKS that cannot be used is refused at start, saying what was wrong', () => {
  const bad = (text: string) => {
    const f = tmp.file(`bad-${Math.random()}.json`);
    writeFileSync(f, text);
    return () => jwtVerifier({ jwks: f });
  };
  assert.throws(bad('not json'), /Invalid JWKS .*it is not JSON/);
  assert.throws(bad('{"keys": []}'), /non-empty "keys" list/);
  assert.throws(bad('{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}'), /no RSA or EC public key/);
  assert.throws(() => jwtVerifier({ jwks: tmp.file('missing.json') }), /cannot read it/);
  assert.throws(() => jwtVerifier({ jwks: 'http://idp.example/jwks.json' }), /must be https/);
});

test.run();
