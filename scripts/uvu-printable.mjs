// Preloaded into every test file's process (scripts/test.mjs: `node --import ./scripts/uvu-printable.mjs`).
// uvu prints a failure's `details` as text (`details.split('\n')`); a SessiondError's `details` is an
// object, so printing its failure threw inside uvu's runner, whose `finally` then swallowed it: the
// failure was never printed and the suite's later tests never ran, a bare "(0 / 14)". The hook below
// has uvu print `details` only when it is text (the error's message and stack are printed as before).
import { register } from 'node:module';

register('./uvu-printable-hooks.mjs', import.meta.url);
