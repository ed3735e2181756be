// Error text in one place, each naming what was wrong.
export const duplicateHandler = (type: string, first: string, second: string) =>
  `Two handlers for delayed task type "${type}": ${first} and ${second}. A type must have exactly one handler.`;

export const unknownType = (type: string, known: string[], suggestion?: string) =>
  `No handler for delayed task type "${type}" in this application` +
  (suggestion ? `; did you mean "${suggestion}"?` : '') +
  ` (known: ${known.length ? known.join(', ') : 'none'}). ` +
  `Register one with @DelayedTaskHandler('${type}'), or set allowUnknownTypes for an app that only produces tasks.`;

export const noHandlerAtRun = (type: string) =>
  `No handler registered for task type "${type}" on the instance that ran it; dead-lettered.`;

export const describeRef = (ref: { id: string } | { key: string }) =>
  'id' in ref ? `with id ${ref.id}` : `with key ${JSON.stringify(ref.key)}`;

export const taskNotFound = (ref: string) => `No delayed task ${ref}.`;

export const errorText = (error: unknown): string => {
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 4000);
  return String(error).slice(0, 4000);
};

export const requestScopedHandler = (type: string, name: string) =>
  `${name} handles delayed task type "${type}" but is request-scoped (or depends on a request-scoped provider), ` +
  `so it is not registered: a task has no request. Make the provider a singleton (the default scope).`;

export const releasedManager = () =>
  'The EntityManager passed as { manager } belongs to a transaction that has already ended';

export const taskInState = (ref: string, state: string, action: string) =>
  `Cannot ${action} the delayed task ${ref}: it is ${state}` +
  (action === 'revive' || action === 'retry'
    ? `, and only a dead-lettered task can be ${action === 'revive' ? 'revived' : 'retried'}.`
    : ', and only a pending one can be.');

export const unknownOption = (
  where: string,
  option: string,
  suggestion: string | undefined,
  known: readonly string[],
  hint: string | undefined,
) => {
  const parent = option.includes('.') ? option.slice(0, option.lastIndexOf('.') + 1) : '';
  return (
    `${where} has no option ${option}` +
    (suggestion ? `; did you mean ${parent}${suggestion}?` : '.') +
    (hint ? ` ${hint}` : '') +
    ` Its options${parent ? ` under ${parent.slice(0, -1)}` : ''}: ${known.join(', ')}.`
  );
};

export const noDatabase = () =>
  'DelayModule has no database: give its options a connection (a pg Pool or a postgres:// connection string), ' +
  'or register a TypeORM DataSource with TypeOrmModule.forRoot (the dataSource extra names which).';

export const noManager = () =>
  'context.manager is a TypeORM EntityManager, and this DelayModule runs on a connection of its own (its connection option), ' +
  'not on a TypeORM DataSource: write through context.sql or context.client, or your ORM through its binding (docs/bindings.md).';

export const missingTables = (detail: string) =>
  `DelayModule's tables are missing from its database (${detail}). Add delayMigrations (from 'nest-delay') ` +
  `to your DataSource's migrations, e.g. migrations: [...delayMigrations, ...yours], and run them ` +
  `(migrationsRun: true, or your migration:run script) before the app starts; without TypeORM, run ` +
  `\`npx nest-delay migrate\` (DATABASE_URL) or call migrateDelaySchema(pool) first.`;

export const migrationsBehind = (detail: string, missing: string[]) =>
  `DelayModule's database is behind this version of nest-delay (${detail}): its migrations table lacks ` +
  `${missing.join(', ')}. Run your migrations, with delayMigrations (from 'nest-delay') among them, ` +
  `before the app starts (migrationsRun: true, or your migration:run script); without TypeORM, ` +
  `\`npx nest-delay migrate\` or migrateDelaySchema(pool).`;

export const noShutdownHooks = () =>
  "Nothing handles SIGTERM in this process: a stop or deploy will not hand this instance's tasks back, " +
  'and the next instance waits out the lease before running them. Call app.enableShutdownHooks() in main.ts ' +
  '(before app.listen), or call app.close() from a signal handler of your own.';
