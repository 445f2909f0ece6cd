/**
 * Ending consumer messages that nothing iterates. nats.js resolves `ConsumerMessages.close()` only
 * once their iterator has run to its end: messages closed before any loop took them (a subscription
 * or follower closed while its consumer was being made) left that close, and the worker's stop
 * waiting on it, pending forever (test/nats/deletion-follower.test.ts).
 */
import type { ConsumerMessages } from '@nats-io/jetstream';

/** Closes `messages`, never iterated, running their iterator to its end (what it still held is dropped). */
export async function endUnread(messages: ConsumerMessages): Promise<void> {
  const closed = messages.close();
  for await (const _ of messages) {
    // dropped: nothing takes messages after a close
  }
  await closed;
}
