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
    outcome: fc.constantFrom('succeeded' as const, 'failed' as const, 'released' as const),
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
  fc.record({ type: fc.constant('requestWake' as const), now }),
  fc.record({ type: fc.constant('failWake' as const), now, park: fc.boolean(), error: fc.constant({ type: 'x', message: 'x' }) }),
);
