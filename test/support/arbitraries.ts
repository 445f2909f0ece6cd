/**
 * fast-check arbitraries shared by the fuzz and equivalence tests: commands for the session machine
 * (every kind, with ids from small pools so they collide) and runner events.
 */
import fc from 'fast-check';
import type { Command, ProtoEvent } from '../../src/machines/commands.ts';

export const ids = (prefix: string) => fc.constantFrom(`${prefix}_1`, `${prefix}_2`, `${prefix}_3`);
export const now = fc.integer({ min: 0, max: 200_000 });

export const protoEvent: fc.Arbitrary<ProtoEvent> = fc.oneof(
  fc.record({ type: fc.constant('step.started' as const), payload: fc.record({ executionId: ids('exe'), messageId: ids('msg'), step: fc.nat(5) }) }),
  fc.record({ type: fc.constant('step.ended' as const), payload: fc.record({ executionId: ids('exe'), messageId: ids('msg'), finish: fc.constant('stop') }) }),
  fc.record({ type: fc.constant('input.promoted' as const), payload: fc.record({ inputId: ids('inp'), executionId: ids('exe') }) }),
  fc.record({
    type: fc.constant('tool.called' as const),
    payload: fc.record({
      executionId: ids('exe'),
      messageId: ids('msg'),
      callId: ids('call'),
      name: fc.constant('t'),
      input: fc.anything(),
      durable: fc.boolean(),
      started: fc.boolean(),
    }),
  }),
  fc.record({ type: fc.constant('recovery.started' as const), payload: fc.record({ executionId: ids('exe') }) }),
  fc.record({ type: fc.constant('tool.started' as const), payload: fc.record({ executionId: ids('exe'), messageId: ids('msg'), callId: ids('call') }) }),
  // a wait of each kind (an approval is named by its call id; a timer and a signal may have a time)
  fc
    .record({
      executionId: ids('exe'),
      kind: fc.constantFrom('approval' as const, 'signal' as const, 'timer' as const),
      name: ids('call'),
      until: fc.option(now, { nil: undefined }),
    })
    .map(({ executionId, kind, name, until }) => ({
      type: 'wait.started' as const,
      payload: {
        executionId,
        kind,
        name,
        ...(kind === 'approval' ? { messageId: 'msg_1', callId: name, tool: 't' } : until === undefined ? {} : { until }),
      },
    })),
) as fc.Arbitrary<ProtoEvent>;

export const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ type: fc.constant('claim' as const), now, ownerId: ids('own'), executionId: ids('exe'), leaseMs: fc.constantFrom(1_000, 30_000) }),
  fc.record({ type: fc.constant('start' as const), now, ownerId: ids('own'), executionId: ids('exe') }),
  fc.record({ type: fc.constant('renew' as const), now, ownerId: ids('own'), executionId: ids('exe') }),
  fc.record({ type: fc.constant('record' as const), now, ownerId: ids('own'), executionId: ids('exe'), events: fc.array(protoEvent, { maxLength: 3 }) }),
  fc.record({
    type: fc.constant('settle' as const),
    now,
    ownerId: ids('own'),
    executionId: ids('exe'),
    outcome: fc.constantFrom('succeeded' as const, 'failed' as const, 'released' as const, 'waiting' as const),
    continuationInputId: ids('inp_cont'),
  }),
  fc.record({ type: fc.constant('cancel' as const), now }),
  fc.record({
    type: fc.constant('admit' as const),
    now,
    inputId: ids('inp'),
    prompt: fc.string(),
    delivery: fc.constantFrom('queue' as const, 'steer' as const),
    wake: fc.boolean(),
  }),
  fc.record({ type: fc.constant('recover' as const), now, continuationInputId: ids('inp_cont') }),
  fc.record({
    type: fc.constant('resolve' as const),
    now,
    kind: fc.constantFrom('approval' as const, 'signal' as const, 'timer' as const),
    name: ids('call'),
    outcome: fc.constantFrom('approved' as const, 'denied' as const, 'delivered' as const, 'timed_out' as const, 'elapsed' as const),
    continuationInputId: ids('inp_cont'),
  }),
  fc.record({ type: fc.constant('requestWake' as const), now }),
  fc.record({ type: fc.constant('failWake' as const), now, park: fc.boolean(), error: fc.constant({ type: 'x', message: 'x' }) }),
);

/** Commands of turns that wait, more often than `command` makes them: what reaches waiting, resolving and resuming. */
export const waitCommand: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    type: fc.constant('record' as const),
    now,
    ownerId: ids('own'),
    executionId: ids('exe'),
    events: fc.array(
      protoEvent.filter((e) => e.type === 'wait.started' || e.type === 'tool.started'),
      { minLength: 1, maxLength: 2 },
    ),
  }),
  fc.record({ type: fc.constant('settle' as const), now, ownerId: ids('own'), executionId: ids('exe'), outcome: fc.constant('waiting' as const) }),
  fc.record({
    type: fc.constant('resolve' as const),
    now,
    kind: fc.constantFrom('approval' as const, 'signal' as const, 'timer' as const),
    name: ids('call'),
    outcome: fc.constantFrom('approved' as const, 'denied' as const, 'delivered' as const, 'timed_out' as const, 'elapsed' as const),
    continuationInputId: ids('inp_cont'),
  }),
  command.filter((c) => c.type === 'claim' || c.type === 'start' || c.type === 'admit' || c.type === 'cancel'),
);

/** Tags (a few keys, so that changes collide), and commands that change them: `tag`, and admissions that carry tags. */
const tagKey = fc.constantFrom('customer', 'env', 'tier', 'team');
export const tagCommand: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    type: fc.constant('tag' as const),
    now,
    tags: fc.dictionary(tagKey, fc.option(fc.constantFrom('a', 'b'), { nil: null }), { maxKeys: 3 }),
  }),
  fc.record({
    type: fc.constant('admit' as const),
    now,
    inputId: ids('inp_t'),
    prompt: fc.constant('p'),
    delivery: fc.constant('queue' as const),
    wake: fc.boolean(),
    tags: fc.dictionary(tagKey, fc.constantFrom('a', 'b'), { maxKeys: 2 }),
  }),
);

/** A fork of another session: a short conversation whose prompts take input ids an admission may reuse, with tags. */
export const forkCommand: fc.Arbitrary<Command> = fc.record({
  type: fc.constant('fork' as const),
  now,
  from: fc.record({ sessionId: fc.constant('ses_source'), seq: fc.integer({ min: 1, max: 20 }) }),
  transcript: fc
    .uniqueArray(ids('inp_t'), { maxLength: 2 })
    .map((inputIds) => inputIds.map((inputId) => ({ type: 'user' as const, inputId, executionId: 'exe_source', text: 'earlier' }))),
  tags: fc.dictionary(tagKey, fc.constantFrom('a', 'b'), { maxKeys: 2 }),
});
