/**
 * The Node floor of `npm run bench:throughput`: the least a Node process can do to answer the
 * one-call request through the store. node:http takes the POST and parses its JSON body; undici's
 * keep-alive Pool (as the gateway's) asks the store for the page of 20; the answer is parsed and
 * written back as `{ data: { pets: { nodes } } }`. No GraphQL, no limits, no checks: not a gateway,
 * but the cost every Node gateway pays per request before it does anything of its own, measured
 * the same way as the rest, so the report can say how much of the gap to Tailcall is Node's.
 */

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

export async function startFloor(storeUrl: string, key: string): Promise<{ url: string; close(): Promise<void> }> {
  const base = new URL(storeUrl);
  const pool = new Pool(base.origin, { connections: 64 });
  const path = `${base.pathname.replace(/\/$/, '')}/pets?limit=20`;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      try {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const answer = await pool.request({
          path,
          method: 'GET',
          headers: { authorization: `Bearer ${key}`, accept: 'application/json' },
        });
        const pets = (await answer.body.json()) as { id: number; name: string; status: string }[];
        const nodes = pets.map((pet) => ({ id: String(pet.id), name: pet.name, status: pet.status.toUpperCase() }));
        const body = JSON.stringify({ data: { pets: { nodes } } });
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        res.end(body);
      } catch {
        res.writeHead(500).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await pool.close();
    },
  };
}
