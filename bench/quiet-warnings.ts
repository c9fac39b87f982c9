/**
 * The bench's own threads print every process warning as Node would, but one: an AbortSignal with
 * more than 1,500 abort listeners. Both SDKs' HTTP transports pass one long-lived signal to every
 * `fetch`, and each fetch's Request keeps a listener on it until garbage collection finalises the
 * Request: under load, thousands at once, expected and not a leak. Node 20's fetch resets the signal's
 * limit to 1,500 whenever ten or more listeners are on it (so no limit set beforehand holds), and
 * Node printed a warning per listener beyond it: 24,000 lines in one full run, between the figures.
 */
export function quietSignalListenerWarnings(): void {
  const printers = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { target?: unknown }) => {
    if (warning.name === 'MaxListenersExceededWarning' && warning.target instanceof AbortSignal) return;
    for (const print of printers) print(warning);
  });
}
