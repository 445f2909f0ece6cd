// 03: a person approves a tool call while the turn waits holding nothing.
//   npx tsx examples/03-approval.ts
// The model (here a scripted stand-in for any OpenAI-compatible server) calls `send_mail`, which
// needs approval: the call is recorded, not run, and the turn settles `waiting` (no lease, no
// worker). `approve` resumes the turn; the call runs once and the model goes on with its result.
import { z } from 'zod';
import { openEngine, openaiRunner, defineTool } from '../src/index.ts';
import { startFakeOpenAI } from '../src/testing/index.ts';

const model = await startFakeOpenAI({ apiKey: 'sk-example' });
model.script(
  { kind: 'toolCalls', calls: [{ id: 'call_mail', name: 'send_mail', arguments: { to: 'bob@example.com' } }] },
  { kind: 'text', text: 'Done: the mail to Bob is sent.' },
);
const tools = {
  send_mail: defineTool({
    description: 'Send an email',
    inputSchema: z.object({ to: z.string() }),
    durable: true, // runs with an idempotency key
    needsApproval: true, // or (input) => boolean
    execute: async ({ to }) => `sent to ${to}`,
  }),
};
const runner = openaiRunner({ model: 'any-model', baseURL: model.url, apiKey: 'sk-example', tools });
const engine = await openEngine({ file: '.sessiond/example-approval.db', runner });

await engine.admit('ses_mail', { prompt: 'Mail Bob that the build is green' });
await engine.awaitIdle('ses_mail');
const waiting = await engine.status('ses_mail');
for (const w of waiting.waits) console.log(`${waiting.outcome}: ${w.kind} of ${w.name} (${w.tool} ${JSON.stringify(w.input)}), owner ${waiting.owner}`);

const decision = await engine.approve('ses_mail', 'call_mail', { reason: 'looks right' }); // or deny(...)
console.log(`approved; the turn resumes with input ${decision.resumeInputId}`);
await engine.awaitIdle('ses_mail');
const done = await engine.status('ses_mail');
const texts = (await engine.log.readSession('ses_mail')).flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : []));
console.log(`${done.outcome}: ${texts.at(-1)}`);
await engine.close();
await model.close();
