/** Bundles the edge handler (src/edge/worker.ts) into `outfile` (default dist/edge-worker.js); resolves to the bundle's size in bytes. */
export function bundleEdge(outfile?: string): Promise<number>;
