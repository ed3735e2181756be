import { ValidationPipe, type INestApplication } from '@nestjs/common';
import { AllExceptionsFilter } from './http/all-exceptions.filter.js';
import { RejectPrototypeKeysPipe } from './http/reject-prototype-keys.pipe.js';

/** What main.ts and the e2e tests both apply to the HTTP app, so tests see what users see. */
export function configureApp(app: INestApplication): INestApplication {
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
  return app;
}
