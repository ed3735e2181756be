import {
  Controller,
  UseGuards,
  UseInterceptors,
  UsePipes,
  ValidationPipe,
  applyDecorators,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBearerAuth,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { AdminAppGuard } from './admin-app.guard.js';
import { AdminTokenGuard } from './admin-token.guard.js';
import { AdminErrorsInterceptor } from './admin-errors.interceptor.js';

/**
 * Its own validation, whatever the app's global pipes are: a field not in
 * the contract is a 400, not silently dropped; DTO instances in the
 * handlers; no implicit conversion, so "100" is not a number.
 */
const validation = new ValidationPipe({
  whitelist: true,
  forbidNonWhitelisted: true,
  transform: true,
  transformOptions: { enableImplicitConversion: false },
});

/**
 * A controller of the admin API at `path` (under the module's path): behind
 * the app's guard and the token (their 401 and 429 documented), its input
 * validated, errors mapped by AdminErrorsInterceptor.
 * `badRequest`: its routes take input, and a 400 names the field.
 */
export function AdminApiController(path: string, { badRequest = false } = {}): ClassDecorator {
  return applyDecorators(
    ApiTags('admin'),
    ApiBearerAuth('admin'),
    ApiUnauthorizedResponse({ description: 'No or wrong bearer token' }),
    ApiTooManyRequestsResponse({
      description: 'Too many failed tokens from this address; see Retry-After',
    }),
    ...(badRequest
      ? [
          ApiBadRequestResponse({
            description: 'Input out of contract; the message names the field',
          }),
        ]
      : []),
    UseGuards(AdminAppGuard, AdminTokenGuard),
    UsePipes(validation),
    UseInterceptors(AdminErrorsInterceptor),
    Controller(path),
  );
}
