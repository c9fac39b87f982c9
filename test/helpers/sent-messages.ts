/** Every message a transport sends from now on, in order (it still sends them). */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export function sentMessages(transport: Transport): JSONRPCMessage[] {
  const sent: JSONRPCMessage[] = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message);
    return send(message, options);
  };
  return sent;
}
