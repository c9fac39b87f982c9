/**
 * The floor of any forward between two instances on this machine: a bare `node:http` relay that sends
 * each request on to one target origin (same method, path, headers and body, on a keep-alive agent)
 * and writes the answer back as it comes. No signature, no nonce, no routing, no MCP: one HTTP hop.
 * A retry through it to the call's owner is what the forwarded retry is compared with. Prints
 * `URL <url>` once listening on 127.0.0.1 (the URL keeps the target's path); exits on SIGTERM.
 */
import { Agent, createServer, request } from 'node:http';

const given = process.argv[2];
if (!given || !URL.canParse(given)) throw new Error('usage: relay.ts <target url>');
const target = new URL(given);
const agent = new Agent({ keepAlive: true });

const server = createServer((req, res) => {
  const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
    answer.on('error', () => res.destroy());
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  out.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  // The client gone before its answer: the request to the target goes too.
  res.on('close', () => {
    if (!res.writableFinished) out.destroy();
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
