import { BadRequestException, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';

const FORBIDDEN = ['__proto__', 'constructor', 'prototype'];

/**
 * How deep a JSON body may nest. No contract of this API goes past a few
 * levels; the validation that runs next walks a body recursively, and a body
 * a few thousand levels deep overflowed its stack (a 500) after stalling the
 * event loop for hundreds of milliseconds.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * Runs before validation, over the whole body, without recursion: a body
 * nested deeper than MAX_BODY_DEPTH is a 400 that names the limit. And
 * JSON.parse keeps a "__proto__" key as an own property, but class-transformer
 * and the whitelist never see it, so `{"userId":"a","amountCents":1,"__proto__":{}}`
 * would pass as a valid body. Such keys are never part of a contract: 400,
 * at any depth.
 */
export class RejectPrototypeKeysPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'body') return value;
    // A DTO describes an object; "property 0 should not exist" would not say what was wrong.
    if (Array.isArray(value) && metadata.metatype && metadata.metatype !== Array) {
      throw new BadRequestException(['request body must be a JSON object, not an array']);
    }
    this.check(value);
    return value;
  }

  private check(body: unknown): void {
    const stack: Array<[value: unknown, depth: number]> = [[body, 0]];
    for (let next = stack.pop(); next; next = stack.pop()) {
      const [value, depth] = next;
      if (value === null || typeof value !== 'object') continue;
      if (depth >= MAX_BODY_DEPTH) {
        throw new BadRequestException([
          `request body must not nest deeper than ${MAX_BODY_DEPTH} levels`,
        ]);
      }
      for (const key of FORBIDDEN) {
        if (Object.prototype.hasOwnProperty.call(value, key)) {
          throw new BadRequestException([`property ${key} should not exist`]);
        }
      }
      for (const child of Object.values(value)) stack.push([child, depth + 1]);
    }
  }
}
