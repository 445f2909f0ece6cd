// 01: run a session on the embedded default (one SQLite file, no NATS).
//   npx tsx examples/01-embedded.ts
import { openEngine, echoRunner } from '../src/index.ts';

const engine = await openEngine({ file: '.sessiond/example.db', runner: echoRunner() });
const receipt = await engine.admit('ses_example', { prompt: 'hello, durable world' }); // admits and wakes
await engine.awaitIdle('ses_example');
const status = await engine.status('ses_example');
console.log(`input ${receipt.inputId} ran; session is ${status.state} at sequence ${status.seq}`);
await engine.close();
