/**
 * `sessiond/testing`, what sessiond's own tests are built with: the contract suites (run them on your
 * own implementation), event fixtures, a fake OpenAI server, real nats-servers on loopback, `waitFor`.
 * Suites and fixtures need uvu (an optional peer dependency), the NATS harness a nats-server binary
 * (SESSIOND_NATS_SERVER or the PATH). Every name: docs/api.md ("Testing: sessiond/testing").
 */
// contract suites
export { eventLogContract, type LogFixture } from './event-log-contract.ts';
export { snapshotStoreContract, type SnapshotStoreFixture } from './snapshot-store-contract.ts';
export { blobStoreContract, type BlobStoreFixture } from './blob-store-contract.ts';
export { sessionsContract, type SessionsFixture } from './sessions-contract.ts';
// event fixtures
export { ev, draft, committed, live, stream, session, expectCode, uniqueId, defaultPayloads, type Proto, type Stamp } from './fixtures.ts';
// a fake OpenAI-compatible server
export {
  startFakeOpenAI,
  echoReply,
  rateLimited,
  contextLengthExceeded,
  serverError,
  messageText,
  estimateTokens,
  type FakeOpenAI,
  type FakeOpenAIOptions,
  type ScriptStep,
  type ScriptedToolCall,
  type ErrorStep,
  type RecordedRequest,
  type ChatCompletionRequest,
  type ChatMessage,
  type UsageOverride,
} from './fake-openai.ts';
// NATS on loopback
export { startNatsServer, setupStreams, NATS_SERVER_BIN, WORKER, CLIENT, OBSERVER, COMMANDS, ADMIN, type NatsServer } from './nats-server.ts';
export { startNatsCluster, type NatsCluster, type NatsClusterNode, type JetStreamSync } from './nats-cluster.ts';
// waiting without sleeps
export { waitFor } from './wait.ts';
