/**
 * The logger seam. The library logs nothing on its own: `createGateway` takes a `Logger`
 * (pino's API shape) and defaults to a silent one. Never pass payloads, keys or tokens.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: object): Logger;
}

/** A logger that drops everything. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
