/**
 * The bench backend over streamable HTTP on 127.0.0.1 (prints `URL <url>`; spec/fixtures/session-http.ts):
 * the same tools as bench/backend.mjs, which serves them over stdio.
 */
import { serveSessions } from '../spec/fixtures/session-http.js';
import { build } from './backend.mjs';

const served = await serveSessions(build);
process.stdout.write(`URL ${served.url}\n`);
process.on('SIGTERM', () => {
  served.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
