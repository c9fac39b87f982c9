/** One edge instance in workerd: its `/mcp` URL, its port, and a stop that ends workerd. */
export interface EdgeWorker {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}
/** Bundles the edge handler into `dir` (unless `bundle: false`) and starts it in workerd with `bindings`. */
export function startEdgeWorker(dir: string, bindings: Record<string, unknown>, opts?: { port?: number; bundle?: boolean }): Promise<EdgeWorker>;
