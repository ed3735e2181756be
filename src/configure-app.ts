import { ValidationPipe, type INestApplication } from '@nestjs/common';
import { AllExceptionsFilter } from './http/all-exceptions.filter.js';
import { RejectPrototypeKeysPipe } from './http/reject-prototype-keys.pipe.js';
import { accessLog } from './ops/logging/access-log.middleware.js';
import { requestId } from './ops/logging/request-id.middleware.js';
import { setupSwagger } from './ops/swagger.js';

/** What main.ts and the e2e tests both apply to the HTTP app, so tests see what users see. */
export function configureApp(
  app: INestApplication,
  { trustProxy = false }: { trustProxy?: boolean | number | string } = {},
): INestApplication {
  // Where a client's address comes from (the admin throttle counts by it): see AppConfig.trustProxy.
  if (trustProxy !== false) {
    const express = app.getHttpAdapter().getInstance() as {
      set(name: string, value: unknown): void;
    };
    express.set('trust proxy', trustProxy);
  }
  // First of all: every line logged for a request, by anyone, carries its id.
  app.use(requestId, accessLog);
  // On every response, 404s and errors included (helmet 8's headers, built into Nest 12;
  // X-Powered-By goes). Framing is refused outright. No HSTS and no
  // upgrade-insecure-requests: TLS ends at the proxy, which decides those for
  // the whole site; here they would only break plain-HTTP use on a private network.
  app.useSecurityHeaders({
    xFrameOptions: { action: 'deny' },
    contentSecurityPolicy: {
      directives: { frameAncestors: ["'none'"], upgradeInsecureRequests: null },
    },
    strictTransportSecurity: false,
  });
  app.useGlobalPipes(
    new RejectPrototypeKeysPipe(),
    new ValidationPipe({
      // A field not in the contract is a 400, not silently dropped.
      whitelist: true,
      forbidNonWhitelisted: true,
      // DTO instances in the handlers; no implicit conversion, so "100" is not a number.
      transform: true,
      transformOptions: { enableImplicitConversion: false },
    }),
  );
  // Malformed JSON is already a 400: Nest's Express adapter maps body-parser's errors.
  app.useGlobalFilters(new AllExceptionsFilter(app.getHttpAdapter()));
  setupSwagger(app);
  return app;
}
