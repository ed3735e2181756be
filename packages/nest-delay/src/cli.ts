#!/usr/bin/env node
/**
 * `npx nest-delay migrate [--url <postgres url>] [--table <name>]`: the
 * engine's tables for an app without TypeORM (migrateDelaySchema). The url
 * defaults to DATABASE_URL.
 */
import { parseArgs } from 'node:util';
import { migrateDelaySchema } from './migrations/index.js';

const USAGE =
  'usage: nest-delay migrate [--url <postgres url>] [--table <name>] (url defaults to DATABASE_URL)';

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: { url: { type: 'string' }, table: { type: 'string' }, help: { type: 'boolean' } },
    });
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { positionals, values } = parsed;
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'migrate') {
    console.error(`unknown command "${positionals.join(' ')}"\n${USAGE}`);
    return 2;
  }
  const url = values.url ?? process.env.DATABASE_URL;
  if (!url) {
    console.error(`no database: give --url or set DATABASE_URL\n${USAGE}`);
    return 2;
  }
  try {
    const ran = await migrateDelaySchema(url, { table: values.table });
    console.log(ran.length ? `ran ${ran.length}: ${ran.join(', ')}` : 'the schema is up to date');
    return 0;
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
}

process.exitCode = await main();
