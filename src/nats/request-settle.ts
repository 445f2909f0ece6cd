/**
 * A request answered without building an Error. nats.js 3.4 settles a request (`RequestOne`, what
 * every JetStream publish, stream read and KV operation is) by resolving its promise and then calling
 * `cancel()`, which rejects the already-resolved promise with a `new RequestError("cancelled")`: a
 * stack captured and thrown away on every answered request, 3 % of a NATS worker's CPU at full load
 * (bench/README.md, hot path steps). Here an answer resolves and cleans up as `cancel()` does, minus
 * that rejection; an error, a timeout or a cancellation still goes through nats.js unchanged.
 *
 * Applied once, when the first connection is made (connection.ts); checked on the installed nats.js
 * by test/nats/request-settle.test.ts, which fails if the class it relies on changes shape.
 */
import { RequestOne } from '@nats-io/transport-node';

interface Settling {
  timer?: { cancel(): void };
  mux: { cancel(request: unknown): void };
  deferred: { resolve(value: unknown): void };
  resolver(err: Error | null, msg: unknown): void;
}

let applied = false;

/** Whether `RequestOne` still has the fields this relies on (else nats.js is left as it is). */
function fits(proto: object): boolean {
  return typeof (proto as Partial<Settling>).resolver === 'function' && typeof (proto as { cancel?: unknown }).cancel === 'function';
}

export function settleRequestsWithoutErrors(): void {
  if (applied) return;
  applied = true;
  const proto = (RequestOne as unknown as { prototype: Settling }).prototype;
  if (!fits(proto)) return;
  const resolver = proto.resolver;
  proto.resolver = function (this: Settling, err: Error | null, msg: unknown): void {
    if (err || !this.deferred || !this.mux) {
      resolver.call(this, err, msg);
      return;
    }
    this.timer?.cancel();
    this.deferred.resolve(msg);
    this.mux.cancel(this);
  };
}
