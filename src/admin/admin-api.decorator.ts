import { Controller, UseGuards, UseInterceptors, applyDecorators } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBearerAuth,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { AdminAuthGuard } from './admin-auth.guard.js';
import { AdminErrorsInterceptor } from './admin-errors.interceptor.js';

/**
 * A controller of the admin API at `path`: bearer-token guarded (with its
 * 401 and 429 documented), errors mapped by AdminErrorsInterceptor.
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
    UseGuards(AdminAuthGuard),
    UseInterceptors(AdminErrorsInterceptor),
    Controller(path),
  );
}
