/**
 * A breadth-first walk of a pure model: every state reachable from `initial` by `events`, each kept
 * once (by `key`), none explored past `stopWhen`. @xstate/graph's traversal queues every transition
 * and takes from its queue with `shift()`, which took half of the session model's run; this one
 * queues each new state once and reads its queue by index.
 */
export interface Walk<S> {
  /** Every state reached, the first found for each key, in the order found. */
  states: S[];
  /** How many transitions were tried. */
  transitions: number;
}

export function walkModel<S, E>(
  initial: S,
  next: (state: S, event: E) => S,
  options: { events: readonly E[]; key: (state: S) => string; stopWhen?: (state: S) => boolean },
): Walk<S> {
  const seen = new Set([options.key(initial)]);
  const states = [initial];
  let transitions = 0;
  for (let i = 0; i < states.length; i++) {
    const state = states[i]!;
    if (options.stopWhen?.(state)) continue;
    for (const event of options.events) {
      transitions++;
      const after = next(state, event);
      const k = options.key(after);
      if (seen.has(k)) continue;
      seen.add(k);
      states.push(after);
    }
  }
  return { states, transitions };
}
