/**
 * The requestState codec on Web Crypto (issue 31: runtimes without node:crypto, such as the edge
 * handler in workerd): state-codec.ts on compact-jwe-web.ts. Its tokens and the Node gateway's
 * (request-state.ts) open each other, and both bind a state to the same request digest.
 */
import { createWebCompactJwe } from './compact-jwe-web.js';
import { createStateCodec, webDigest, type RequestStateCodec, type RequestStateCodecOptions } from './state-codec.js';

/** Creates the codec. Rejects if no key is given or a key is not 32 bytes. */
export async function createWebRequestStateCodec(options: RequestStateCodecOptions): Promise<RequestStateCodec> {
  if (options.keys.length === 0) throw new Error('createWebRequestStateCodec: at least one key is required');
  return createStateCodec(await createWebCompactJwe(options.keys), webDigest, options);
}
