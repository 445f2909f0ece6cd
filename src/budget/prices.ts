/**
 * A price table: US dollars per million tokens, per model (`sessiond start --prices FILE`, the
 * `prices` option). A call is priced when it ends and its cost recorded with its usage, so a later
 * change of prices never rewrites what was spent (format: docs/operating.md#budgets).
 */
import { readFileSync } from 'node:fs';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { Usage } from '../events/catalog.ts';
import { roundUsd } from '../machines/budget-spend.ts';

export interface ModelPrice {
  input: number;
  cachedInput?: number;
  output: number;
  reasoning?: number;
}
/** Prices by model id (what the model runner's `LanguageModel.modelId` says, e.g. `gpt-4o-mini`). */
export type Prices = Readonly<Record<string, ModelPrice>>;

const FIELDS = ['input', 'cachedInput', 'output', 'reasoning'] as const;
const EXAMPLE = '{"gpt-4o-mini": {"input": 0.15, "cachedInput": 0.075, "output": 0.6}}';

/** Reads and checks a prices file (`--prices`). */
export function loadPrices(path: string): Prices {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SessiondError(ErrorCode.InvalidOption, `--prices ${path}: cannot read it (${(err as Error).message}).`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new SessiondError(ErrorCode.InvalidOption, `--prices ${path} is not valid JSON (${(err as Error).message}): write ${EXAMPLE}.`);
  }
  return checkPrices(raw, `--prices ${path}`);
}

/** Checks a price table (a file's content, or the API's `prices` option); `source` names it in every error. */
export function checkPrices(raw: unknown, source = 'prices'): Prices {
  const fail = (where: string, what: string) =>
    new SessiondError(ErrorCode.InvalidOption, `${source}: ${where}: ${what}. Prices are US dollars per million tokens, e.g. ${EXAMPLE}.`);
  if (!isObject(raw)) throw fail('the table', 'expected an object of models, each with its prices');
  const out: Record<string, ModelPrice> = {};
  for (const [model, entry] of Object.entries(raw)) {
    if (model.length === 0) throw fail('a model', 'the model id is empty');
    if (!isObject(entry)) throw fail(`model "${model}"`, 'expected an object {"input": ..., "output": ...}');
    const unknown = Object.keys(entry).find((k) => !(FIELDS as readonly string[]).includes(k));
    if (unknown !== undefined) throw fail(`model "${model}"`, `unknown key "${unknown}" (known: ${FIELDS.join(', ')})`);
    const price: Record<string, number> = {};
    for (const field of FIELDS) {
      const v = entry[field];
      if (v === undefined) {
        if (field === 'input' || field === 'output') throw fail(`model "${model}"`, `"${field}" is missing`);
        continue;
      }
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw fail(`model "${model}" ${field}`, `${JSON.stringify(v)} is not a number >= 0`);
      price[field] = v;
    }
    out[model] = price as unknown as ModelPrice;
  }
  return out;
}

/** What a call with `usage` cost on `model` (undefined: the model has no price). */
export function costOf(prices: Prices | undefined, model: string | undefined, usage: Usage): number | undefined {
  if (prices === undefined || model === undefined || !Object.hasOwn(prices, model)) return undefined;
  const p = prices[model]!;
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const reasoning = Math.min(usage.reasoningTokens ?? 0, usage.outputTokens);
  const micro =
    (usage.inputTokens - cached) * p.input +
    cached * (p.cachedInput ?? p.input) +
    (usage.outputTokens - reasoning) * p.output +
    reasoning * (p.reasoning ?? p.output);
  return roundUsd(micro / 1_000_000);
}

/** A usage with its cost, where the model has a price (a cost already recorded is kept). */
export function priced(prices: Prices | undefined, model: string | undefined, usage: Usage): Usage {
  if (usage.costUsd !== undefined) return usage;
  const cost = costOf(prices, model, usage);
  return cost === undefined ? usage : { ...usage, costUsd: cost };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
