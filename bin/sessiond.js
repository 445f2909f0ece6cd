#!/usr/bin/env node
// The development CLI of a clone: runs the TypeScript source through tsx (a dev dependency), so the
// tests, the fault suite and `node bin/sessiond.js ...` use src/ as it is, with no build step. It does
// not ship: the package's bin is dist/cli/main.js, the compiled CLI (`npm run build`).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
