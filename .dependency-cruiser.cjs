// The import graph of the package and the app, checked in `npm run lint`:
// no cycle, and layers that only point down. The package's folders, lowest first:
//   wheel/, clock/           pure: nothing outside themselves
//   store/                   the connection to Postgres (sql, the TypeORM seam)
//   tasks/ … tracing/        features: each owns its runtime, statements and types
//   runtime/                 wires the features (delay.runtime.ts) and their shared context
//   root services, admin/,   the public API on top
//   testing/
// The app (src/) depends on the package by name; the package never on the app.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: one of the two files belongs lower down.',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'no-circular-types',
      severity: 'error',
      comment: 'A cycle through type imports is a cycle of ideas all the same.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'wheel-is-pure',
      severity: 'error',
      comment: 'The timing wheel is a data structure: no Nest, no clock, no database.',
      from: { path: '^packages/nest-delay/src/wheel/' },
      to: { pathNot: ['^packages/nest-delay/src/wheel/'], dependencyTypesNot: ['core'] },
    },
    {
      name: 'clock-is-a-leaf',
      severity: 'error',
      from: { path: '^packages/nest-delay/src/clock/' },
      to: { pathNot: ['^packages/nest-delay/src/clock/'], dependencyTypesNot: ['core', 'npm'] },
    },
    {
      name: 'store-below-features',
      severity: 'error',
      comment: 'The store talks to Postgres; the statements of a feature live in its folder.',
      from: { path: '^packages/nest-delay/src/store/' },
      to: {
        path: '^packages/nest-delay/src/(tasks|claim|limits|schedules|lease|firing|retention|tracing|observer|admin|runtime|testing)/',
      },
    },
    {
      name: 'features-below-runtime',
      severity: 'error',
      comment:
        'Only the public services (*.service.ts, in a feature folder or at the root) and the test helpers reach the runtime that wires everything.',
      from: {
        path: '^packages/nest-delay/src/(tasks|claim|limits|schedules|lease|firing|retention|tracing|observer|store|wheel|clock|runtime)/',
        pathNot: ['[.]service[.]ts$'],
      },
      to: { path: '^packages/nest-delay/src/runtime/delay[.]runtime[.]ts$' },
    },
    {
      name: 'features-below-public-services',
      severity: 'error',
      comment: 'Features do not reach up to the public services and the module.',
      from: {
        path: '^packages/nest-delay/src/(tasks|claim|limits|schedules|lease|firing|retention|tracing|observer|store|wheel|clock|runtime)/',
        pathNot: ['[.]service[.]ts$', '[.]decorator[.]ts$'],
      },
      to: {
        path: '^packages/nest-delay/src/(delay[.]service|delay[.]module|delay[.]explorer|admin/|testing/|index|internal)',
      },
    },
    {
      name: 'package-never-imports-the-app',
      severity: 'error',
      from: { path: '^packages/nest-delay/' },
      to: { path: '^(src|test|bench)/' },
    },
    {
      name: 'app-uses-the-package-by-name',
      severity: 'error',
      comment: 'The app imports nest-delay, nest-delay/testing or nest-delay/internal, never its files.',
      from: { path: '^src/' },
      to: { path: '^packages/nest-delay/src/' , pathNot: ['^packages/nest-delay/src/(index|internal|testing/index)[.]ts$'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['(^|/)dist/', '[.]spec[.]ts$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
