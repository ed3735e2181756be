import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeWithServer } from '../support/test-database.js';
import { buildDocApp, setupCommands, type DocApp } from './doc-app.js';
import { serverDatabase } from './server-database.js';
import { cleanUp, expectOk, pkgDir } from './tarball.js';

// A `nest new` app on another ORM than TypeORM, with no TypeORM installed,
// for each of the package's "Getting started on …" pages, built from the
// page alone (doc-app.ts): its e2e test schedules in the ORM's own
// transaction and closes the order through the claim's.

afterAll(cleanUp);

const CREATE_ORDERS = expect.stringMatching(/^psql "\$DATABASE_URL" -c "CREATE TABLE orders/);
const APPS = [
  {
    orm: 'Drizzle',
    page: 'docs/drizzle-app.md',
    setup: /^(npx nest-delay|psql) /,
    commands: ['npx nest-delay migrate', CREATE_ORDERS],
  },
  {
    orm: 'Prisma',
    page: 'docs/prisma-app.md',
    setup:
      /^(npx nest-delay|psql|PRISMA_SCHEMA_ENGINE_BINARY=\/bin\/true npx prisma generate)( |$)/,
    commands: [
      'npx nest-delay migrate',
      CREATE_ORDERS,
      'PRISMA_SCHEMA_ENGINE_BINARY=/bin/true npx prisma generate',
    ],
  },
];

describe.each(APPS)(
  'a `nest new` app on $orm following $page',
  ({ orm, page: file, setup, commands }) => {
    const page = readFileSync(join(pkgDir, file), 'utf8');

    describeWithServer('with a Postgres server', () => {
      let db: Awaited<ReturnType<typeof serverDatabase>>;
      let app: DocApp;

      beforeAll(async () => {
        db = await serverDatabase(orm.toLowerCase().slice(0, 2));
        app = buildDocApp(page, `${orm.toLowerCase()}-app`, db.url, setup);
      }, 300_000);

      afterAll(() => db?.drop());

      it('installs without TypeORM', () => {
        expectOk(app.steps.install, 'npm install');
        const pkg = JSON.parse(readFileSync(join(app.dir, 'package.json'), 'utf8'));
        expect(Object.keys(pkg.dependencies)).not.toContain('typeorm');
      });

      it("sets up with the page's commands: the package's bin, then psql (and the ORM's own)", async () => {
        expect(setupCommands(page, setup)).toEqual(commands);
        expectOk(app.steps.setup, 'setup');
        const [row] = await db.query(
          `SELECT to_regclass('delayed_task')::text AS engine, to_regclass('orders')::text AS orders`,
        );
        expect(row).toEqual({ engine: 'delayed_task', orders: 'orders' });
      });

      it("type-checks with the scaffold's tsconfig", () => {
        expectOk(app.steps.tsc, 'tsc --noEmit');
      });

      it(`passes the page's e2e test and the scaffold's, twice on one database: scheduled in ${orm}'s transaction, closed through the claim's`, async () => {
        for (const step of [app.steps.e2e, app.steps.e2eAgain]) {
          expectOk(step, 'npm run test:e2e');
          expect(step.output).toMatch(/Tests\s+2 passed \(2\)/);
        }
        const closed = await db.query(
          `SELECT count(*)::int AS n FROM orders WHERE status = 'CLOSED'`,
        );
        expect(closed[0].n).toBe(2);
      });
    });
  },
);
