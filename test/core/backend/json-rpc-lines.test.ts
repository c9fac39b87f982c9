import { deserializeMessage, ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { describe, expect, it } from 'vitest';
import { LineBuffer, parseMessage } from '../../../src/core/backend/json-rpc-lines.js';

/** What the SDK makes of a line: the message, or that it throws. */
function sdk(line: string): unknown {
  try {
    return { ok: JSON.stringify(deserializeMessage(line)) }; // key order too
  } catch {
    return 'throws';
  }
}
function ours(line: string): unknown {
  try {
    return { ok: JSON.stringify(parseMessage(line)) };
  } catch {
    return 'throws';
  }
}

const LINES = [
  '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}',
  '{"result":{},"id":"a","jsonrpc":"2.0"}',
  '{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":"odd"}}}',
  '{"jsonrpc":"2.0","id":1,"result":{"_meta":null}}',
  '{"jsonrpc":"2.0","id":1.5,"result":{}}',
  '{"jsonrpc":"2.0","id":9007199254740992,"result":{}}',
  '{"jsonrpc":"2.0","id":-0,"result":{}}',
  '{"jsonrpc":"2.0","id":null,"result":{}}',
  '{"jsonrpc":"2.0","id":1,"result":[]}',
  '{"jsonrpc":"2.0","id":1,"result":null}',
  '{"jsonrpc":"2.0","id":1,"result":{},"extra":1}',
  '{"jsonrpc":"1.0","id":1,"result":{}}',
  '{"id":1,"result":{}}',
  '{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}',
  '{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object"}}}',
  '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}',
  '{"jsonrpc":"2.0","id":1,"result":{"__proto__":{"x":1}}}',
  '{"jsonrpc":"2.0","__proto__":{"id":1},"id":1,"result":{}}',
  '[{"jsonrpc":"2.0","id":1,"result":{}}]',
  '"text"',
  'not json',
  '',
];

describe('parseMessage', () => {
  it('reads every line as the SDK does: the same message, or a throw', () => {
    for (const line of LINES) expect(ours(line), line).toEqual(sdk(line));
  });
});

describe('LineBuffer', () => {
  it('frames lines as the SDK ReadBuffer does: split anywhere, \\r\\n allowed', () => {
    const text = '{"a":1}\r\n{"b":2}\n\n{"c":"é"}\npartial';
    const bytes = Buffer.from(text, 'utf8');
    for (let cut = 0; cut <= bytes.length; cut++) {
      const ours = new LineBuffer();
      ours.append(bytes.subarray(0, cut));
      const lines: (string | null)[] = [];
      for (let l = ours.nextLine(); l !== null; l = ours.nextLine()) lines.push(l);
      ours.append(bytes.subarray(cut));
      for (let l = ours.nextLine(); l !== null; l = ours.nextLine()) lines.push(l);
      expect(lines, `cut at ${cut}`).toEqual(['{"a":1}', '{"b":2}', '', '{"c":"é"}']);
    }
  });

  it('refuses more than the SDK limit without a newline, and starts afresh', () => {
    const lines = new LineBuffer();
    const sdkBuffer = new ReadBuffer();
    const big = Buffer.alloc(6 * 1024 * 1024, 0x61);
    lines.append(big);
    sdkBuffer.append(big);
    expect(() => lines.append(big)).toThrow(/maximum size/);
    expect(() => sdkBuffer.append(big)).toThrow(/maximum size/);
    lines.append(Buffer.from('{"x":1}\n'));
    expect(lines.nextLine()).toBe('{"x":1}');
  });
});
