/**
 * Tools a model may call (`defineTool`): an input schema (zod, or JSON Schema through `jsonInput`), a
 * description, `durable`, `needsApproval` and the function, run through `ctx.tool` (journaled first).
 * Docs: docs/model-runner.md#the-model-runner---runner-openai (why: docs/model-runner.md#tool-inputs).
 */
import { jsonSchema, tool as sdkTool, type JSONSchema7, type Tool } from 'ai';
import type { z } from 'zod';
import { SessiondError, ErrorCode } from '../../errors.ts';
import type { ToolContext } from '../types.ts';
import { importUserModule } from '../user-module.ts';

/** A tool input given as JSON Schema, with a check of a call's input (an error message, or undefined when it fits). */
export interface JsonInput {
  readonly kind: 'json-schema';
  readonly jsonSchema: JSONSchema7;
  validate(input: unknown): string | undefined;
}

/** A JSON-schema input; without `validate`, any input is taken (the tool checks it). */
export function jsonInput(schema: JSONSchema7, validate: (input: unknown) => string | undefined = () => undefined): JsonInput {
  return { kind: 'json-schema', jsonSchema: schema, validate };
}

export interface ModelTool<I = unknown, O = unknown> {
  description: string;
  inputSchema: z.ZodType<I> | JsonInput;
  /** Durable: the call carries an idempotency key (`ctx.idempotencyKey`) for the effect to deduplicate on. */
  durable?: boolean;
  /** The call waits for a person's approval before it runs (always, or when this says so for the input). */
  needsApproval?: boolean | ((input: I) => boolean);
  execute(input: I, ctx: ToolContext): Promise<O> | O;
}

/** Tools by the name the model calls them. */
export type ToolRegistry = Readonly<Record<string, ModelTool>>;

/** Types a tool's `execute` from its schema. */
export function defineTool<S extends z.ZodType, O>(tool: {
  description: string;
  inputSchema: S;
  durable?: boolean;
  needsApproval?: boolean | ((input: z.output<S>) => boolean);
  execute(input: z.output<S>, ctx: ToolContext): Promise<O> | O;
}): ModelTool {
  return tool as unknown as ModelTool;
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Checks a registry: names the model can call, a description, a zod schema and a function each. */
export function checkTools(tools: unknown, where = 'tools'): ToolRegistry {
  if (typeof tools !== 'object' || tools === null || Array.isArray(tools)) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `${where}: expected an object of tools by name (export default { name: defineTool({...}) }), got ${Array.isArray(tools) ? 'an array' : typeof tools}.`,
    );
  }
  for (const [name, t] of Object.entries(tools)) {
    const bad = (what: string) => new SessiondError(ErrorCode.InvalidOption, `${where}: tool "${name}" ${what}.`);
    if (!NAME.test(name)) throw bad('has a name a model cannot call: use 1 to 64 letters, digits, _ or -');
    const tool = t as Partial<ModelTool>;
    if (typeof tool !== 'object' || tool === null) throw bad('is not an object (use defineTool)');
    if (typeof tool.description !== 'string' || tool.description.length === 0) throw bad('needs a description (what it does, for the model)');
    if (typeof (tool.inputSchema as { safeParse?: unknown } | undefined)?.safeParse !== 'function' && !isJsonInput(tool.inputSchema))
      throw bad('needs an inputSchema made with zod (z.object({...})) or jsonInput(schema)');
    if (typeof tool.execute !== 'function') throw bad('needs an execute(input, ctx) function');
    if (tool.durable !== undefined && typeof tool.durable !== 'boolean') throw bad('has a durable flag that is not true or false');
    if (tool.needsApproval !== undefined && typeof tool.needsApproval !== 'boolean' && typeof tool.needsApproval !== 'function')
      throw bad('has a needsApproval that is neither true/false nor a function of the input');
  }
  return tools as ToolRegistry;
}

/** Loads a registry from a module (its default export, or an export named `tools`). */
export async function loadTools(path: string): Promise<ToolRegistry> {
  const mod: { default?: unknown; tools?: unknown } = await importUserModule(path, 'tools module');
  const tools = mod.default ?? mod.tools;
  if (tools === undefined)
    throw new SessiondError(ErrorCode.InvalidOption, `${path} exports no tools: export default { name: defineTool({...}) } (or export const tools).`);
  return checkTools(tools, path);
}

/** The registry as the AI SDK's tools, without `execute`: the runner runs each call itself, through `ctx.tool`. */
export function sdkTools(tools: ToolRegistry): Record<string, Tool> {
  return Object.fromEntries(
    Object.entries(tools).map(([name, t]) => [
      name,
      sdkTool({ description: t.description, inputSchema: isJsonInput(t.inputSchema) ? sdkJsonSchema(t.inputSchema) : (t.inputSchema as z.ZodType<unknown>) }),
    ]),
  );
}

/** A call's input checked against its tool's schema: the parsed input, or what is wrong with it. */
export function parseToolInput(tool: ModelTool, input: unknown): { success: true; data: unknown } | { success: false; message: string } {
  if (isJsonInput(tool.inputSchema)) {
    const problem = tool.inputSchema.validate(input);
    return problem === undefined ? { success: true, data: input } : { success: false, message: problem };
  }
  const parsed = tool.inputSchema.safeParse(input);
  return parsed.success ? { success: true, data: parsed.data } : { success: false, message: parsed.error.message };
}

function isJsonInput(s: unknown): s is JsonInput {
  return typeof s === 'object' && s !== null && (s as { kind?: unknown }).kind === 'json-schema';
}

function sdkJsonSchema(input: JsonInput) {
  return jsonSchema(input.jsonSchema, {
    validate: (value) => {
      const problem = input.validate(value);
      return problem === undefined ? { success: true, value } : { success: false, error: new Error(problem) };
    },
  });
}
