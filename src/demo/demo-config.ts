/**
 * The configuration `npm start` uses when no `--config` is given: the bundled legacy demo backend
 * over stdio, spawned with the same Node binary.
 */
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';

/** The `mcpServers` entry for the demo backend (works from dist/ and, via tsx, from src/). */
export function demoServerEntry(): { command: string; args: string[] } {
  const js = fileURLToPath(new URL('./demo-backend.js', import.meta.url));
  if (existsSync(js)) return { command: process.execPath, args: [js] };
  const ts = fileURLToPath(new URL('./demo-backend.ts', import.meta.url));
  return { command: process.execPath, args: ['--import', 'tsx', ts] };
}

export function demoConfigFile(): unknown {
  return { mcpServers: { demo: demoServerEntry() }, gateway: { roots: [{ uri: 'file:///tmp', name: 'tmp' }] } };
}
