import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';

/**
 * OpenAPI for every controller of the app (the orders API, the admin API,
 * the probes), built from their decorators: the UI at /docs, the document
 * at /docs-json.
 */
export function setupSwagger(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('nest-delay orders')
    .setDescription(
      'Orders whose payment timeout and automatic review are durable delayed tasks (nest-delay). ' +
        'Errors are `{ statusCode, message, error }`, the message naming the field, id or state at fault.',
    )
    .setVersion('0.1.0')
    // The orders API's scheme: a user's JWT (`npm run -s token -- <userId>` in development).
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description:
          'a user\'s JWT: sub is the user, roles: ["admin"] sees every order (AUTH_JWT_SECRET or AUTH_JWKS_URL)',
      },
      'user',
    )
    // The admin routes' scheme (they exist only when ADMIN_TOKEN is set).
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'the ADMIN_TOKEN' }, 'admin')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json' });
}
