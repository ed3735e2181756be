import type { INestApplication } from '@nestjs/common';

/** What main.ts and the e2e tests both apply to the HTTP app, so tests see what users see. */
export function configureApp(app: INestApplication): INestApplication {
  return app;
}
