// The entry of a client thread (client-threads.ts): on Node 20 a worker thread does not run the
// parent's `--import` of tsx, so it registers tsx here, then loads the client thread's code.
import { register } from 'tsx/esm/api';

register();
await import('./client-worker.ts');
