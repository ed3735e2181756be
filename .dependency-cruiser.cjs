// The import graph of the package and the app, checked in `npm run lint`:
// no cycle, and the package's layers (LAYERS below, lowest first) where a
// file imports only from its own layer or a lower one. Each layer is a
// folder but two: "base" is the root's types, messages, options and errors
// that every feature names, and "services" is the public surface (every
// *.service.ts, wherever it lives, the module, the explorer, the index).
// The app (src/) depends on the package by name; the package never on the app.
const P = '^packages/nest-delay/src/';
const SERVICE = '[.]service[.]ts$';
const TOP_ROOT = `${P}(delay[.]module|delay[.]module-definition|delay[.]explorer|index|internal|delay-stats|cli)[.]ts$`;
const LAYERS = [
  ['wheel', `${P}wheel/`],
  ['clock', `${P}clock/`],
  ['base', `${P}(errors/|[^/]+$)`],
  ['store', `${P}store/`],
  ['migrations', `${P}migrations/`],
  ['observer', `${P}observer/`],
  ['tasks', `${P}tasks/`],
  ['tracing', `${P}tracing/`],
  ['context', `${P}context/`],
  ['schedules', `${P}schedules/`],
  ['limits', `${P}limits/`],
  ['firing', `${P}firing/`],
  ['claim', `${P}claim/`],
  ['lease', `${P}lease/`],
  ['retention', `${P}retention/`],
  ['runtime', `${P}runtime/`],
  ['services', `(${SERVICE}|${TOP_ROOT}|${P}admin/)`],
  // nest-delay/pg, /kysely, /drizzle, /prisma, /mikro-orm, /cls: entries of their own, each the only importer of its ORM.
  ['bindings', `${P}bindings/`],
  ['admin-module', `${P}admin-module/`],
  ['testing', `${P}testing/`],
];
/** One rule a layer: nothing in it imports from a layer above it. */
const layerRules = LAYERS.slice(0, -1).map(([name, path], index) => ({
  name: `layer-${name}`,
  severity: 'error',
  comment: `${name} imports only from itself and the layers below it (.dependency-cruiser.cjs, LAYERS).`,
  // A service in a feature's folder belongs to the services, not to the feature.
  from: name === 'services' ? { path } : { path, pathNot: [SERVICE, TOP_ROOT] },
  to: { path: LAYERS.slice(index + 1).map(([, above]) => above) },
}));
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
    ...layerRules,
    {
      name: 'admin-module-only-through-its-entry',
      severity: 'error',
      comment:
        'nest-delay/admin is an entry of its own (it needs class-validator and @nestjs/swagger): the rest of the package never imports it.',
      from: { path: P, pathNot: `${P}admin-module/` },
      to: { path: `${P}admin-module/` },
    },
    {
      name: 'orms-only-in-their-binding',
      severity: 'error',
      comment:
        'kysely, drizzle-orm, Prisma, MikroORM and @nestjs-cls are optional peers: only their binding (nest-delay/kysely, /drizzle, /prisma, /mikro-orm, /cls) may import one, and nothing outside bindings/ imports a binding.',
      from: { path: P, pathNot: `${P}bindings/` },
      to: {
        path: [
          '(^|/)node_modules/(kysely|drizzle-orm|@prisma/[^/]+|@mikro-orm/[^/]+|nestjs-cls|@nestjs-cls/[^/]+)/',
          `${P}bindings/`,
        ],
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
      comment:
        "The app imports nest-delay, nest-delay/testing or nest-delay/admin, never its files nor nest-delay/internal (which is for this repository's bench and tests).",
      from: { path: '^src/' },
      to: {
        path: '^packages/nest-delay/src/',
        pathNot: ['^packages/nest-delay/src/(index|testing/index|admin-module/index)[.]ts$'],
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^(packages/nest-delay/)?dist/', '[.]spec[.]ts$'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
