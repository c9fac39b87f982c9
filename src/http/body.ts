/**
 * Reads a request body with its size limit enforced, in bytes: a body that goes past the limit is cut
 * off at the limit, never buffered whole.
 *
 * A body whose length is declared (Content-Length) is read in one piece (`arrayBuffer()`: on
 * @hono/node-server straight from the socket, without the web stream a Request body is made of): the
 * HTTP parser that framed it delivers exactly the declared bytes, so a declared length within the
 * limit bounds the read. A chunked body (no length) is read chunk by chunk and cut off at the limit
 * while it streams. Either way a read longer than the limit is refused.
 */
export type BodyRead = { ok: true; text: string } | { ok: false; reason: 'too_large' | 'unreadable' };

const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function readBodyLimited(request: Request, maxBytes: number): Promise<BodyRead> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) return { ok: false, reason: 'too_large' };
  if (declared !== null && /^\d+$/.test(declared)) return readDeclared(request, maxBytes);
  if (!request.body) return { ok: true, text: '' };
  return readStreamed(request.body, maxBytes);
}

/** A body of declared length, in one read. */
async function readDeclared(request: Request, maxBytes: number): Promise<BodyRead> {
  let bytes: ArrayBuffer;
  try {
    bytes = await request.arrayBuffer();
  } catch {
    return { ok: false, reason: 'unreadable' };
  }
  if (bytes.byteLength > maxBytes) return { ok: false, reason: 'too_large' };
  return decode(new Uint8Array(bytes));
}

/** A body of unknown length, cut off once past `maxBytes`. */
async function readStreamed(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<BodyRead> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { ok: false, reason: 'too_large' };
      }
      chunks.push(value);
    }
  } catch {
    return { ok: false, reason: 'unreadable' };
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  return decode(bytes);
}

function decode(bytes: Uint8Array): BodyRead {
  try {
    return { ok: true, text: utf8.decode(bytes) };
  } catch {
    return { ok: false, reason: 'unreadable' };
  }
}
