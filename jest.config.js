// NestJS 12 ships ESM only, so Jest runs in ESM mode (see package.json "test":
// node --experimental-vm-modules). ts-jest compiles with the project's tsconfig.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/test', '<rootDir>/packages/nest-delay/src'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    // The app and its tests import the package by name; Jest runs its sources.
    '^nest-delay$': '<rootDir>/packages/nest-delay/src/index.ts',
    '^nest-delay/testing$': '<rootDir>/packages/nest-delay/src/testing/index.ts',
    '^nest-delay/admin$': '<rootDir>/packages/nest-delay/src/admin-module/index.ts',
    '^nest-delay/(pg|kysely|drizzle|prisma|mikro-orm|cls)$': '<rootDir>/packages/nest-delay/src/bindings/$1.ts',
    // Not covered by semver: the app's own code reaches engine internals here.
    '^nest-delay/internal$': '<rootDir>/packages/nest-delay/src/internal.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  testTimeout: 60_000,
  maxWorkers: 2,
};
