/**
 * A byte stream that calls `onEnd` once when it ends: read to its end, cancelled by its reader (a
 * client that went away), or failed at its source — which ends this stream cleanly (what was passed on
 * stays passed on) and hands the failure to `onEnd`. For answers streaming through this process.
 */
export function untilEnd(body: ReadableStream<Uint8Array>, onEnd: (error?: Error) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  const end = (error?: Error): void => {
    if (ended) return;
    ended = true;
    onEnd(error);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) {
          end();
          controller.close();
        } else controller.enqueue(value);
      } catch (e) {
        end(e instanceof Error ? e : new Error(String(e)));
        controller.close();
      }
    },
    async cancel(reason) {
      end();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}
