/**
 * Who may name a stored blob in an admission on the embedded engine: trusted callers any; an owner
 * one it uploaded within the hour (a grant) or one a session it reaches references; not one it only
 * knows the hash of. Grants in memory and as staged objects behave the same.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { GRANT_MS, memoryGrants, stagedGrants, type BlobGrants } from '../../src/blobs/blob-grants.ts';
import type { BlobStaging } from '../../src/blobs/blob-staging.ts';
import { ManualClock } from '../../src/clock.ts';
import { openEngine } from '../../src/engine.ts';
import { ErrorCode } from '../../src/errors.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { pngBytes } from '../support/png.ts';
import { tempDir } from '../support/tmp.ts';

const s = suite('blob access');

s('blob access - an owner references a blob it was granted or one a session it reaches holds, never one it only knows the hash of', async () => {
  const tmp = tempDir();
  const clock = new ManualClock(Date.parse('2026-12-07T00:00:00Z'));
  const engine = await openEngine({ file: tmp.file('access.db'), runner: echoRunner(), clock });
  try {
    const ref = await engine.blobs!.put(pngBytes(90_000, 3), { mediaType: 'image/png' });
    const admit = (id: string, owner?: string) =>
      engine.admit(id, { prompt: [{ type: 'image', blob: ref }], wake: false, ...(owner === undefined ? {} : { owner }) });
    await expectCode(admit('s_acme_1', 'acme'), ErrorCode.InvalidOption, 'not stored or is not yours to use');
    await engine.blobGrants!.grant('acme', ref.sha256);
    await admit('s_acme_1', 'acme');
    await expectCode(admit('s_globex_1', 'globex'), ErrorCode.InvalidOption, 'not yours to use');
    // the grant is over; acme's own session still references the blob
    await clock.advance(GRANT_MS + 1);
    assert.is(await engine.blobGrants!.granted('acme', ref.sha256), false);
    await admit('s_acme_2', 'acme');
    await expectCode(admit('s_globex_1', 'globex'), ErrorCode.InvalidOption, 'not yours to use');
    // a trusted caller names any stored blob; its session, owned by no one, every owner reaches
    await admit('s_shared');
    await admit('s_globex_1', 'globex');
    // a hash never stored gets the same answer as one not yours
    const missing = { ...ref, sha256: 'f'.repeat(64) };
    await expectCode(
      engine.admit('s_acme_3', { prompt: [{ type: 'image', blob: missing }], owner: 'acme', wake: false }),
      ErrorCode.InvalidOption,
      'not stored or is not yours to use',
    );
  } finally {
    await engine.close();
    tmp.remove();
  }
});

/** A staging area in memory, as the Object Store keeps one. */
function memoryStaging(): BlobStaging {
  const staged = new Map<string, Uint8Array>();
  return {
    stage: async (name, bytes) => void staged.set(name, bytes),
    staged: async (name) => staged.get(name),
    unstage: async (name) => staged.delete(name),
    async *listStaged() {
      for (const [name, bytes] of staged) yield { name, size: bytes.length, storedAt: 0 };
    },
  };
}

for (const [name, make] of [
  ['in memory', (clock: ManualClock) => memoryGrants(clock)],
  ['staged', (clock: ManualClock) => stagedGrants(memoryStaging(), clock)],
] as const) {
  s(`blob access - grants ${name}: per owner and hash, for GRANT_MS`, async () => {
    const clock = new ManualClock(1_000_000);
    const grants: BlobGrants = make(clock);
    const a = 'a'.repeat(64);
    await grants.grant('token:bob', a);
    assert.is(await grants.granted('token:bob', a), true);
    assert.is(await grants.granted('token:carol', a), false);
    assert.is(await grants.granted('token:bob', 'b'.repeat(64)), false);
    await clock.advance(GRANT_MS);
    assert.is(await grants.granted('token:bob', a), true);
    await clock.advance(1);
    assert.is(await grants.granted('token:bob', a), false);
    await grants.grant('token:bob', a); // granted again: from now
    assert.is(await grants.granted('token:bob', a), true);
  });
}

s.run();
