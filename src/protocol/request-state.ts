/**
 * The requestState codec of the Node gateway: state-codec.ts on the node:crypto compact JWE
 * (compact-jwe.ts, about a tenth of jose's cost per seal + open). The edge handler uses the same codec
 * on Web Crypto (request-state-web.ts); their tokens are interchangeable.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../util/canonical-json.js';
import { createAsyncCompactJwe } from './compact-jwe.js';
import { createStateCodec, type Digester, type RequestStateCodec, type RequestStateCodecOptions } from './state-codec.js';

export * from './state-codec.js';

/**
 * The digest on node:crypto, synchronous: WebCrypto's async digest was the largest item of the
 * gateway's own CPU time in a pass-through profile (`npm run bench`) when every call was digested.
 */
export const nodeDigest: Digester = (value) => createHash('sha256').update(canonicalJson(value)).digest('base64url');

/** Creates the codec. Throws if no key is given or a key is not 32 bytes. */
export async function createRequestStateCodec(options: RequestStateCodecOptions): Promise<RequestStateCodec> {
  if (options.keys.length === 0) throw new Error('createRequestStateCodec: at least one key is required');
  return createStateCodec(createAsyncCompactJwe(options.keys), nodeDigest, options);
}
