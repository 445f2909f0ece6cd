/** Seams for tests, tools and the inspector: not part of the stable API. */
export { CommandHandler } from './execution/command-handler.ts';
export { createRunRegistry, localRun, whenIdle } from './execution/registry.ts';
export { foldContext, initialContext, leaseLive, type SessionContext, type ExecutionState } from './machines/session-context.ts';
export { decisionFor } from './machines/session-machine.ts';
export { eventLogContract, type LogFixture } from './testing/event-log-contract.ts';
export { waitFor } from './testing/wait.ts';
export { startNatsServer } from './testing/nats-server.ts';
export { flushAsync } from './clock.ts';
