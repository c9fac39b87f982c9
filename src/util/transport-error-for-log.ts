/**
 * A backend transport's error as a log line shows it. Such errors quote what the backend sent: the
 * SDK's "Received a response for an unknown message ID: {…}" carries the whole message (a tool's
 * result may echo an elicitation answer or a token), and JSON.parse's "Unexpected token …, "…" is not
 * valid JSON" a piece of a line the backend wrote to stdout. The line keeps what the error is and the
 * id it names; what was quoted is left out.
 */

const UNKNOWN_ID = /^(Received a response for an unknown message ID): (\{[\s\S]*\})$/;
const MAX = 300;

/** `message` with the backend's words left out: a quoted JSON object, or a quoted string, as `…`. */
export function transportErrorForLog(message: string): string {
  const unknown = UNKNOWN_ID.exec(message);
  if (unknown) return `${unknown[1]}: ${idOf(unknown[2]!)}`;
  const hidden = message.replace(/\{[\s\S]*\}/, '{…}').replace(/"(?:[^"\\]|\\.)*"?/g, '"…"');
  return hidden.length > MAX ? `${hidden.slice(0, MAX)}…` : hidden;
}

/** The id of the JSON-RPC message `json`, as JSON (clipped), or `?` when it has none to show. */
function idOf(json: string): string {
  try {
    const id = (JSON.parse(json) as { id?: unknown }).id;
    if (typeof id === 'number') return String(id);
    if (typeof id === 'string') return JSON.stringify(id.slice(0, 64));
  } catch {
    // not JSON after all: nothing of it is shown
  }
  return '?';
}
