// The app `npx @nestjs/cli@12.0.8 new demo --package-manager npm` scaffolds
// (2026-11-25; @nestjs/schematics 12.0.6, its ts-esm template): its
// package.json, tsconfig files, its two Vitest configs (unit: `*.spec.ts`;
// e2e: `*.e2e-spec.ts`), its unit and e2e tests and its sources, as written.
// The nest-new consumer test adds the package README's files on top, as a
// stranger following it would.
//
// Left out of its devDependencies, to keep the install short: the CLI and
// schematics (`nest build` is replaced by the scaffold's own tsc config),
// oxlint, coverage, prettier, source-map-support and @nestjs/mau. What stays
// is what the README's steps and the scaffold's tests touch: Nest, Vitest,
// TypeScript 6, supertest.

/** Its dependencies, taken at the repo's locked versions (offline from npm's cache). */
export const NEST_NEW_DEPS = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/platform-express',
  'reflect-metadata',
  'rxjs',
];
export const NEST_NEW_DEV_DEPS_LOCKED = [
  '@nestjs/testing',
  '@types/express',
  'supertest',
  '@types/supertest',
];

/**
 * The versions the scaffold's caret ranges resolved to on 2026-11-25, which
 * the repo does not lock: TypeScript 6 (the repo's own is 5.9), Vitest 4 on
 * Vite 8 (both allow Node 20.19: `npm view vitest@4.1.12 engines`).
 */
export const NEST_NEW_DEV_DEPS_PINNED: Record<string, string> = {
  '@types/node': '24.19.2',
  typescript: '6.0.3',
  vitest: '4.1.12',
  'vite-tsconfig-paths': '5.1.4',
};

export const NEST_NEW_SCRIPTS = {
  build: 'tsc -p tsconfig.build.json',
  'start:prod': 'node dist/main',
  test: 'vitest run',
  'test:e2e': 'vitest run --config ./vitest.config.e2e.ts',
};

export const NEST_NEW_FILES: Record<string, string> = {
  'tsconfig.json': `{
  "compilerOptions": {
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "resolvePackageJsonExports": true,
    "esModuleInterop": true,
    "isolatedModules": true,
    "declaration": true,
    "removeComments": true,
    "emitDecoratorMetadata": true,
    "experimentalDecorators": true,
    "allowSyntheticDefaultImports": true,
    "target": "ES2023",
    "sourceMap": true,
    "outDir": "./dist",
    "rootDir": ".",
    "incremental": true,
    "skipLibCheck": true,
    "strict": true,
    "strictPropertyInitialization": false,
    "types": ["vitest/globals", "node"]
  }
}
`,
  'tsconfig.build.json': `{
  "extends": "./tsconfig.json",
  "compilerOptions": {
    "rootDir": "./src"
  },
  "include": ["src"],
  "exclude": ["node_modules", "test", "dist", "**/*spec.ts"]
}
`,
  'vitest.config.ts': `import { defineConfig } from 'vitest/config';
import tsconfigPaths from 'vite-tsconfig-paths';

export default defineConfig({
  // Resolves the path aliases declared in tsconfig.json, including the ones
  // added by \`nest g library\`.
  plugins: [tsconfigPaths()],
  test: {
    globals: true,
    root: './',
    include: ['**/*.spec.ts'],
  },
});
`,
  'vitest.config.e2e.ts': `import { defineConfig } from 'vitest/config';
import tsconfigPaths from 'vite-tsconfig-paths';

export default defineConfig({
  plugins: [tsconfigPaths()],
  test: {
    globals: true,
    root: './',
    include: ['**/*.e2e-spec.ts'],
  },
});
`,
  'test/app.e2e-spec.ts': `import { Test, TestingModule } from '@nestjs/testing';
import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { App } from 'supertest/types.js';
import { AppModule } from './../src/app.module.js';

describe('AppController (e2e)', () => {
  let app: INestApplication<App>;

  beforeEach(async () => {
    const moduleFixture: TestingModule = await Test.createTestingModule({
      imports: [AppModule],
    }).compile();

    app = moduleFixture.createNestApplication();
    await app.init();
  });

  it('/ (GET)', () => {
    return request(app.getHttpServer())
      .get('/')
      .expect(200)
      .expect('Hello World!');
  });

  afterEach(async () => {
    await app.close();
  });
});
`,
  'src/main.ts': `import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

async function bootstrap() {
  const app = await NestFactory.create(AppModule);
  await app.listen(process.env.PORT ?? 3000);
}
await bootstrap();
`,
  'src/app.module.ts': `import { Module } from '@nestjs/common';
import { AppController } from './app.controller.js';
import { AppService } from './app.service.js';

@Module({
  imports: [],
  controllers: [AppController],
  providers: [AppService],
})
export class AppModule {}
`,
  'src/app.controller.ts': `import { Controller, Get } from '@nestjs/common';
import { AppService } from './app.service.js';

@Controller()
export class AppController {
  constructor(private readonly appService: AppService) {}

  @Get()
  getHello(): string {
    return this.appService.getHello();
  }
}
`,
  'src/app.service.ts': `import { Injectable } from '@nestjs/common';

@Injectable()
export class AppService {
  getHello(): string {
    return 'Hello World!';
  }
}
`,
  'src/app.controller.spec.ts': `import { Test, TestingModule } from '@nestjs/testing';
import { AppController } from './app.controller.js';
import { AppService } from './app.service.js';

describe('AppController', () => {
  let appController: AppController;

  beforeEach(async () => {
    const app: TestingModule = await Test.createTestingModule({
      controllers: [AppController],
      providers: [AppService],
    }).compile();

    appController = app.get<AppController>(AppController);
  });

  describe('root', () => {
    it('should return "Hello World!"', () => {
      expect(appController.getHello()).toBe('Hello World!');
    });
  });
});
`,
};
