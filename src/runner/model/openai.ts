/**
 * The built-in model runner for any OpenAI-compatible chat-completions server (OpenAI, vLLM,
 * llama.cpp's server, Ollama, LiteLLM...), through the AI SDK's `@ai-sdk/openai-compatible`
 * provider. It reads no environment: the CLI passes `OPENAI_API_KEY` and `OPENAI_BASE_URL`.
 *
 *   const runner = openaiRunner({ model: 'gpt-4o-mini', baseURL: 'https://api.openai.com/v1', apiKey });
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { SessiondError, ErrorCode } from '../../errors.ts';
import type { Runner } from '../types.ts';
import { modelRunner, type ModelRunnerOptions } from './model-runner.ts';

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

export interface OpenAIRunnerOptions extends Omit<ModelRunnerOptions, 'model'> {
  /** The model name the server knows (e.g. gpt-4o-mini, or the name vLLM or Ollama serves). */
  model: string;
  /** The server's base URL, ending before /chat/completions (default https://api.openai.com/v1). */
  baseURL?: string;
  /** Sent as `Authorization: Bearer <apiKey>` (local servers often need none). */
  apiKey?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export function openaiRunner(options: OpenAIRunnerOptions): Runner {
  const { model, baseURL = DEFAULT_OPENAI_BASE_URL, apiKey, headers, ...rest } = options;
  if (typeof model !== 'string' || model.length === 0)
    throw new SessiondError(ErrorCode.InvalidOption, 'The openai runner needs a model name (--model NAME), e.g. gpt-4o-mini or the name your server serves.');
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid base URL ${JSON.stringify(baseURL)}: use the server's URL up to /v1, e.g. http://127.0.0.1:8000/v1.`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid base URL ${baseURL}: use http:// or https://.`);
  const provider = createOpenAICompatible({
    name: 'openai-compatible',
    baseURL: baseURL.replace(/\/+$/, ''),
    includeUsage: true,
    // the chat API takes an image by its URL (the server fetches it); a file URL is downloaded here and sent as bytes
    supportedUrls: () => ({ 'image/*': [/^https?:\/\//] }),
    ...(apiKey ? { apiKey } : {}),
    ...(headers ? { headers } : {}),
  });
  // the deployment's limits name this server by its base URL (`providers` in a limits file)
  return modelRunner({ ...rest, provider: baseURL.replace(/\/+$/, ''), model: provider.chatModel(model) });
}
