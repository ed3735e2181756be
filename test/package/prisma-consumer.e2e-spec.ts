import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeWithServer } from '../support/test-database.js';
import { buildDocApp, setupCommands, type DocApp } from './doc-app.js';
import { serverDatabase } from './server-database.js';
import { cleanUp, expectOk, pkgDir } from './tarball.js';

const page = readFileSync(join(pkgDir, 'docs/prisma-app.md'), 'utf8');
const SETUP =
  /^(npx nest-delay|psql|PRISMA_SCHEMA_ENGINE_BINARY=\/bin\/true npx prisma generate)( |$)/;

afterAll(cleanUp);

describeWithServer('a `nest new` app on Prisma, no TypeORM, following docs/prisma-app.md', () => {
  let db: Awaited<ReturnType<typeof serverDatabase>>;
  let app: DocApp;

  beforeAll(async () => {
    db = await serverDatabase('pz');
    app = buildDocApp(page, 'prisma-app', db.url, SETUP);
  }, 300_000);

  afterAll(() => db?.drop());

  it('installs without TypeORM', () => {
    expectOk(app.steps.install, 'npm install');
    const pkg = JSON.parse(readFileSync(join(app.dir, 'package.json'), 'utf8'));
    expect(Object.keys(pkg.dependencies)).not.toContain('typeorm');
  });

  it("creates the tables and the client with the page's commands: the package's bin, psql, prisma generate offline", async () => {
    expect(setupCommands(page, SETUP)).toEqual([
      'npx nest-delay migrate',
      expect.stringMatching(/^psql "\$DATABASE_URL" -c "CREATE TABLE orders/),
      'PRISMA_SCHEMA_ENGINE_BINARY=/bin/true npx prisma generate',
    ]);
    expectOk(app.steps.setup, 'setup');
    const [row] = await db.query(
      `SELECT to_regclass('delayed_task')::text AS engine, to_regclass('orders')::text AS orders`,
    );
    expect(row).toEqual({ engine: 'delayed_task', orders: 'orders' });
  });

  it("type-checks with the scaffold's tsconfig", () => {
    expectOk(app.steps.tsc, 'tsc --noEmit');
  });

  it("passes the page's e2e test and the scaffold's, twice on one database: scheduled in Prisma's $transaction, closed through the claim's", async () => {
    for (const step of [app.steps.e2e, app.steps.e2eAgain]) {
      expectOk(step, 'npm run test:e2e');
      expect(step.output).toMatch(/Tests\s+2 passed \(2\)/);
    }
    const closed = await db.query(`SELECT count(*)::int AS n FROM orders WHERE status = 'CLOSED'`);
    expect(closed[0].n).toBe(2);
  });
});
