import { BadRequestException, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';

const FORBIDDEN = ['__proto__', 'constructor', 'prototype'];

/**
 * JSON.parse keeps a "__proto__" key as an own property, but class-transformer
 * and the whitelist never see it, so `{"userId":"a","amountCents":1,"__proto__":{}}`
 * would pass as a valid body. Such keys are never part of a contract: 400.
 */
export class RejectPrototypeKeysPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'body') return value;
    // A DTO describes an object; "property 0 should not exist" would not say what was wrong.
    if (Array.isArray(value) && metadata.metatype && metadata.metatype !== Array) {
      throw new BadRequestException(['request body must be a JSON object, not an array']);
    }
    this.check(value, 0);
    return value;
  }

  private check(value: unknown, depth: number): void {
    if (value === null || typeof value !== 'object' || depth > 20) return;
    for (const key of FORBIDDEN) {
      if (Object.prototype.hasOwnProperty.call(value, key)) {
        throw new BadRequestException([`property ${key} should not exist`]);
      }
    }
    for (const child of Object.values(value)) this.check(child, depth + 1);
  }
}
