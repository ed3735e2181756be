/** The driver's own connections, named so backend-kill never terminates them. */
import pg from 'pg';

export async function connect(url: string, name = 'long-bench-driver'): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: name });
  client.on('error', () => {}); // a terminated or restarted backend is expected here
  await client.connect();
  return client;
}

/** One statement on a connection of its own: survives a Postgres restart between calls. */
export async function once<T extends pg.QueryResultRow>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = await connect(url);
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end().catch(() => {});
  }
}
