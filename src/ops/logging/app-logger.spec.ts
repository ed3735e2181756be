import { AppLogger } from './app-logger.js';
import { runInRequest } from './request-context.js';

function capture(format: 'json' | 'pretty', level: 'info' | 'debug' = 'info') {
  const out: string[] = [];
  const logger = new AppLogger({
    format,
    level,
    destination: { write: (s: string) => out.push(s) },
  });
  return { logger, out };
}

describe('AppLogger', () => {
  it('drops lines below its level', () => {
    const { logger, out } = capture('json', 'info');
    logger.debug('hidden', 'Ctx');
    logger.verbose('hidden', 'Ctx');
    logger.log('shown', 'Ctx');
    expect(out.map((s) => JSON.parse(s).msg)).toEqual(['shown']);
  });

  it("reads Nest's arguments: context last, a stack before it on error, fields from an object", () => {
    const { logger, out } = capture('json');
    logger.error('failed', 'Error: x\n    at here', 'Ctx');
    logger.log({ msg: 'with fields', orderId: 'o-1' }, 'Ctx');
    const [error, fields] = out.map((s) => JSON.parse(s));
    expect(error).toMatchObject({
      level: 'error',
      msg: 'failed',
      context: 'Ctx',
      stack: 'Error: x\n    at here',
    });
    expect(fields).toMatchObject({
      level: 'info',
      msg: 'with fields',
      orderId: 'o-1',
      context: 'Ctx',
    });
  });

  it('writes one readable line in pretty format, with the scope as key=value', () => {
    const { logger, out } = capture('pretty');
    runInRequest({ requestId: 'r-1' }, () => logger.warn('slow', 'Ctx'));
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} WARN {2}\[Ctx\] slow {2}requestId=r-1\n$/);
  });
});
