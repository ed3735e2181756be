import { jest } from '@jest/globals';
import pg from 'pg';
import type { ClaimClient } from '../task.types.js';
import { ClaimPool } from './claim-pool.js';
import { lentClient } from './lent-client.js';

/** A claim's client that records what it is sent. */
function claimClient() {
  const sent: string[] = [];
  const client: ClaimClient & { end(): Promise<void> } = {
    query: async (config: string | { text: string }) => {
      sent.push(typeof config === 'string' ? config : config.text);
      return { rows: [], rowCount: 0, command: 'SELECT' };
    },
    end: jest.fn(async () => undefined),
  } as never;
  return { sent, client };
}

describe('ClaimPool (the pool @prisma/adapter-pg is given in a handler)', () => {
  it("sends every statement, queried or on a connection, to the claim's client", async () => {
    const { sent, client } = claimClient();
    const pool = new ClaimPool(lentClient({ client }));
    await pool.query({ text: 'SELECT 1', rowMode: 'array' } as never);
    const connection = await pool.connect();
    await connection.query('SELECT 2');
    connection.release();
    await pool.end();
    expect(sent).toEqual(['SELECT 1', 'SELECT 2']);
    expect(client.end).not.toHaveBeenCalled();
  });

  it('refuses the BEGIN of a $transaction on its connection', async () => {
    const { sent, client } = claimClient();
    const connection = await new ClaimPool(lentClient({ client })).connect();
    await expect(connection.query('BEGIN')).rejects.toThrow(/"BEGIN" refused/);
    expect(sent).toEqual([]);
  });

  it('taken for a config by a pool of another copy of pg, refuses to connect instead of running outside the claim', async () => {
    const { client } = claimClient();
    const claimPool = new ClaimPool(lentClient({ client }));
    // What PrismaPg does with what is not `instanceof` its pg.Pool: `new pg.Pool(config)`.
    const foreign = new pg.Pool(claimPool as unknown as pg.PoolConfig);
    await expect(foreign.query('SELECT 1')).rejects.toThrow(/did not take the claim's pool/);
    await foreign.end();
  });
});
