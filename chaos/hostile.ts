/**
 * The fault suite's hostile client: among the faults, a client that pushes at the limits.
 *
 *   burst      dozens of steering prompts into one session at once, past the workers' pending
 *              limit (`HOSTILE_MAX_PENDING`, which the suite starts its workers with): the ones
 *              admitted must run like any other, the rest must be refused as `limit_exceeded`
 *   oversized  a prompt over the prompt limit (refused as invalid, never admitted), and on NATS raw
 *              requests a bad client would send: a 600 KB id, JSON nested 100,000 deep, not JSON at
 *              all; each must get a reply of bounded size, not silence and not `internal`
 *
 * A refusal other than those is a finding; everything admitted joins the driver's acknowledged
 * inputs, so the checker's liveness (every input admitted with a wake runs) covers it.
 */
export const HOSTILE_MAX_PENDING = 40;
export const HOSTILE_MAX_PROMPT_BYTES = 64 * 1024;
/** Replies to oversized requests must stay under this many bytes. */
export const HOSTILE_REPLY_BOUND = 16 * 1024;

export interface HostileTarget {
  /** Admits a prompt; rejects with the error (its `code`) when refused. */
  admit(session: string, inputId: string, prompt: string, delivery: 'queue' | 'steer'): Promise<void>;
  /** NATS only: sends raw bytes as a command request and resolves with the reply's bytes. */
  rawRequest?(subject: string, body: Uint8Array): Promise<Uint8Array>;
}

export interface HostileOutcome {
  kind: 'burst' | 'oversized';
  detail: string;
  /** Input ids admitted (they must run). */
  admitted: string[];
  /** What went wrong: a refusal of an unexpected kind, a missing or oversized reply. */
  unexpected: string[];
}

const codeOf = (err: unknown) => (err as { code?: string }).code ?? (err as Error).message;

export async function hostileAction(random: () => number, target: HostileTarget, sessions: number, label: string): Promise<HostileOutcome> {
  const session = `ses_${Math.floor(random() * sessions)}`;
  const unexpected: string[] = [];
  const admitted: string[] = [];
  if (random() < 0.6) {
    const n = HOSTILE_MAX_PENDING + 10 + Math.floor(random() * HOSTILE_MAX_PENDING);
    let refused = 0;
    await Promise.all(
      Array.from({ length: n }, async (_, k) => {
        const id = `inp_${label}_h${k}`;
        try {
          await target.admit(session, id, `burst ${k}`, 'steer');
          admitted.push(id);
        } catch (err) {
          const code = codeOf(err);
          if (code === 'limit_exceeded') refused++;
          else if (code !== 'timeout' && code !== 'unavailable' && code !== 'no_worker' && code !== 'log_closed') unexpected.push(`burst admit ${id}: ${code}`);
        }
      }),
    );
    return {
      kind: 'burst',
      detail: `burst of ${n} steering prompts into ${session}: ${admitted.length} admitted, ${refused} refused at the limit`,
      admitted,
      unexpected,
    };
  }
  // a prompt over the limit: refused, never admitted
  const big = 'o'.repeat(HOSTILE_MAX_PROMPT_BYTES + 1 + Math.floor(random() * 1024));
  try {
    await target.admit(session, `inp_${label}_big`, big, 'queue');
    unexpected.push(`a prompt of ${big.length} bytes was admitted over the limit of ${HOSTILE_MAX_PROMPT_BYTES}`);
  } catch (err) {
    const code = codeOf(err);
    if (code !== 'invalid_option' && code !== 'invalid_input' && code !== 'timeout' && code !== 'unavailable' && code !== 'no_worker')
      unexpected.push(`oversized prompt: ${code}`);
  }
  let raw = '';
  if (target.rawRequest) {
    const bodies: [string, string][] = [
      ['a 600 KB id', JSON.stringify({ sessionId: session, id: `inp_${'i'.repeat(600 * 1024)}`, prompt: 'x' })],
      ['JSON nested 100,000 deep', `{"sessionId":"${session}","prompt":"x","id":${'['.repeat(100_000)}${']'.repeat(100_000)}}`],
      ['not JSON', '\u0000\u00ff not json'],
    ];
    const answered: string[] = [];
    for (const [what, body] of bodies) {
      try {
        const reply = await target.rawRequest('sessiond.cmd.admit', new TextEncoder().encode(body));
        const text = new TextDecoder().decode(reply);
        if (reply.byteLength > HOSTILE_REPLY_BOUND) unexpected.push(`${what}: a reply of ${reply.byteLength} bytes (bound ${HOSTILE_REPLY_BOUND})`);
        if (/"code":"internal"/.test(text)) unexpected.push(`${what}: answered internal: ${text.slice(0, 200)}`);
        if (!/"ok":false/.test(text)) unexpected.push(`${what}: not refused: ${text.slice(0, 200)}`);
        answered.push(`${what} (${reply.byteLength} bytes)`);
      } catch (err) {
        const code = codeOf(err);
        // under faults a worker may be down; a request nobody answered is not the request's fault
        if (!/timeout|no responders|no_worker|TIMEOUT|503/i.test(String(code))) unexpected.push(`${what}: ${String(code)}`);
      }
    }
    raw = `; raw requests answered: ${answered.join(', ') || 'none (no worker up)'}`;
  }
  return { kind: 'oversized', detail: `oversized requests to ${session}: a ${big.length}-byte prompt refused${raw}`, admitted, unexpected };
}
