/**
 * The floor of any forward between two instances on this machine: a bare `node:http` relay that sends
 * each request on to one target origin (same method, path, headers and body, on a keep-alive agent)
 * and writes the answer back as it comes. No signature, no nonce, no routing, no MCP: one HTTP hop.
 * A retry through it to the call's owner is what the forwarded retry is compared with. Prints
 * `URL <url>` once listening on 127.0.0.1 (the URL keeps the target's path); exits on SIGTERM.
 */
import { Agent, createServer, request } from 'node:http';

const target = new URL(process.argv[2] ?? '');
if (!target.host) throw new Error('usage: relay.ts <target url>');
const agent = new Agent({ keepAlive: true });

const server = createServer((req, res) => {
  const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(out);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object') process.stdout.write(`URL http://127.0.0.1:${address.port}${target.pathname}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  agent.destroy();
  process.exit(0);
});
