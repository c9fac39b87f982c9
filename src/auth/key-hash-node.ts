/**
 * The Node gateway's key hash for the authenticator: node:crypto's SHA-256, synchronous (Web Crypto's
 * digest is a promise per request; the edge handler uses that one, key-hash.ts).
 */
import { createHash } from 'node:crypto';
import type { KeyHash } from './key-hash.js';

export const nodeKeyHash: KeyHash = (text) => createHash('sha256').update(text).digest('hex');
