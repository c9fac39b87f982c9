/**
 * The requestState codec of the Node gateway: state-codec.ts on the node:crypto compact JWE
 * (compact-jwe.ts, about a tenth of jose's cost per seal + open). The edge handler uses the same codec
 * on Web Crypto (request-state-web.ts); their tokens are interchangeable.
 */
import { createCompactJwe } from './compact-jwe.js';
import { createStateCodec, type RequestStateCodec, type RequestStateCodecOptions } from './state-codec.js';

export * from './state-codec.js';

/** Creates the codec. Throws if no key is given or a key is not 32 bytes. */
export async function createRequestStateCodec(options: RequestStateCodecOptions): Promise<RequestStateCodec> {
  if (options.keys.length === 0) throw new Error('createRequestStateCodec: at least one key is required');
  const jwe = createCompactJwe(options.keys);
  return createStateCodec({ seal: async (p) => jwe.seal(p), read: async (t) => jwe.read(t) }, options);
}
