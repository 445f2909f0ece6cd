/**
 * The model runner's classifier on errors as proxies rewrite them (LiteLLM's shapes: the upstream's
 * kind kept in an exception name and `type`, the code rewritten to "400", the Retry-After header
 * dropped but its wait kept in the words), and the plain OpenAI shapes it always read.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { APICallError } from 'ai';
import { classify, waitNamedIn } from '../../src/runner/model/retry.ts';

function apiError(status: number, error: Record<string, unknown>, headers: Record<string, string> = {}): APICallError {
  return new APICallError({
    message: String(error.message),
    url: 'http://127.0.0.1:4000/v1/chat/completions',
    requestBodyValues: {},
    statusCode: status,
    responseHeaders: headers,
    responseBody: JSON.stringify({ error }),
    isRetryable: false,
  });
}

test('classify - an overflow LiteLLM names ContextWindowExceededError (code "400", upstream wording unknown) is compacted, not failed', () => {
  const err = apiError(400, {
    message:
      'litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - Request exceeds the model budget.\nReceived Model Group=fake',
    type: null,
    param: null,
    code: '400',
  });
  assert.is(classify(err, 0).kind, 'overflow');
});

test('classify - overflow by code or type alone, and by the wordings of other servers', () => {
  assert.is(classify(apiError(400, { message: 'too big', code: 'context_length_exceeded' }), 0).kind, 'overflow');
  assert.is(classify(apiError(400, { message: 'too big', type: 'context_window_exceeded' }), 0).kind, 'overflow');
  assert.is(classify(apiError(400, { message: 'prompt is too long: 210000 tokens > 200000 maximum' }), 0).kind, 'overflow');
  assert.is(classify(apiError(400, { message: 'Input is too long for requested model.' }), 0).kind, 'overflow');
  assert.is(classify(apiError(400, { message: 'The input token count exceeds the maximum number of tokens allowed' }), 0).kind, 'overflow');
  assert.is(classify(apiError(400, { message: 'Input tokens exceed the configured limit of 272000 tokens.' }), 0).kind, 'overflow');
  assert.is(classify(apiError(400, { message: 'Invalid value for temperature', code: 'invalid_value' }), 0).kind, 'fatal', 'an ordinary 400 still fails');
});

test('classify - a proxy that rewrote a rate limit to 400 is still retried, by the exception name it kept', () => {
  const f = classify(apiError(400, { message: 'litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached', code: '400' }), 0);
  assert.is(f.kind, 'retry');
});

test("classify - the wait comes from Retry-After, else from the message's words when a proxy dropped the header", () => {
  const headed = classify(apiError(429, { message: 'slow down' }, { 'retry-after': '2' }), 0);
  assert.equal(headed.kind === 'retry' && headed.retryAfterMs, 2_000);
  const worded = classify(apiError(429, { message: 'litellm.RateLimitError: Rate limit reached for gpt-4o. Please try again in 3s. Visit ...' }), 0);
  assert.equal(worded.kind === 'retry' && worded.retryAfterMs, 3_000);
  const none = classify(apiError(429, { message: 'Rate limit reached' }), 0);
  assert.equal(none.kind === 'retry' && none.retryAfterMs, undefined);
});

test('waitNamedIn - the forms servers use', () => {
  assert.is(waitNamedIn('Please try again in 6ms.'), 6);
  assert.is(waitNamedIn('try again in 1.5 seconds'), 1_500);
  assert.is(waitNamedIn('Please retry after 20 sec'), 20_000);
  assert.is(waitNamedIn('Try again in 1m30s.'), 90_000);
  assert.is(waitNamedIn('Please try again later.'), undefined);
  assert.is(waitNamedIn('no wait here'), undefined);
});

test.run();
