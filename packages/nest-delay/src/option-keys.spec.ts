import {
  assertKnownAsyncOptions,
  assertKnownHandlerOptions,
  assertKnownOptions,
} from './option-keys.js';
import { resolveDelayOptions } from './delay.options.js';
import { UnknownTaskTypeError, UnknownOptionError } from './errors/delay-errors.js';
import { closest } from './closest-name.js';

/** The error `fn` throws, to assert on its fields. */
function thrown(fn: () => unknown): UnknownOptionError {
  try {
    fn();
  } catch (error) {
    if (error instanceof UnknownOptionError) return error;
    throw error;
  }
  throw new Error('expected an UnknownOptionError, nothing was thrown');
}

describe('option keys', () => {
  it('names a misspelt module option and the one it was meant to be', () => {
    const error = thrown(() => assertKnownOptions({ tickMS: 50 } as never));
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({ where: 'DelayModule', option: 'tickMS', suggestion: 'tickMs' });
    expect(error.message).toMatch(/^DelayModule has no option tickMS; did you mean tickMs\? /);
  });

  it('checks the nested policies and the observer, naming the path', () => {
    expect(() => assertKnownOptions({ retry: { maxAttempt: 3 } } as never)).toThrow(
      /^DelayModule has no option retry.maxAttempt; did you mean retry.maxAttempts\? Its options under retry: maxAttempts, baseDelay, maxDelay, jitter\.$/,
    );
    expect(() => assertKnownOptions({ retention: { finish: '1d' } } as never)).toThrow(
      /has no option retention.finish; did you mean retention.finished\?/,
    );
    expect(() => assertKnownOptions({ observer: { onExecute: () => {} } } as never)).toThrow(
      /has no option observer.onExecute; did you mean observer.onExecuted\?/,
    );
  });

  it('leaves an observer its own fields and methods', () => {
    class Metrics {
      registry = new Map();
      onExecuted() {}
      flush() {}
    }
    expect(
      resolveDelayOptions(assertKnownOptions({ observer: new Metrics() })).observer,
    ).toBeInstanceOf(Metrics);
  });

  it('suggests nothing for a key far from every option', () => {
    const error = thrown(() => assertKnownOptions({ pollInterval: 5 } as never));
    expect(error.suggestion).toBeUndefined();
    expect(error.message).toMatch(
      /^DelayModule has no option pollInterval\. Its options: tickMs, /,
    );
  });

  it('tells a factory that returns an extra to give it to forRootAsync', () => {
    expect(() => assertKnownOptions({ dataSource: 'jobs' } as never)).toThrow(
      /DelayModule has no option dataSource\. dataSource shapes the module itself: give it to forRootAsync beside useFactory/,
    );
  });

  it("checks forRootAsync's own keys, pointing a module option to the factory", () => {
    expect(() =>
      assertKnownAsyncOptions({ useFactory: () => ({}), isGlobal: false }),
    ).not.toThrow();
    expect(() => assertKnownAsyncOptions({ useFactory: () => ({}), injects: [] })).toThrow(
      /^DelayModule.forRootAsync has no option injects; did you mean inject\?/,
    );
    expect(() => assertKnownAsyncOptions({ useFactory: () => ({}), tickMs: 5 })).toThrow(
      /has no option tickMs\. tickMs is a module option: return it from useFactory/,
    );
  });

  it("checks a handler's options, and its retry has no maxAttempts", () => {
    const where = "@DelayedTaskHandler('t') on H.m";
    expect(() =>
      assertKnownHandlerOptions({ maxAttempts: 2, retry: { jitter: 0 } }, where),
    ).not.toThrow();
    expect(() => assertKnownHandlerOptions({ timout: '5s' } as never, where)).toThrow(
      /^@DelayedTaskHandler\('t'\) on H.m has no option timout; did you mean timeout\?/,
    );
    expect(() => assertKnownHandlerOptions({ retry: { maxAttempts: 2 } } as never, where)).toThrow(
      /has no option retry.maxAttempts\. A handler sets maxAttempts beside retry, not in it\./,
    );
  });

  it.each([
    ['maxattempts', 'maxAttempts'],
    ['batchsize', 'batchSize'],
    ['windw', 'window'],
    ['leese', 'lease'],
    ['xyz', undefined],
  ])('closest(%s) is %s', (key, expected) => {
    expect(closest(key, ['maxAttempts', 'batchSize', 'window', 'lease', 'slots'])).toBe(expected);
  });
});

describe('an unknown task type', () => {
  it('names the handler type it was most likely meant to be', () => {
    const error = new UnknownTaskTypeError('order.closed', ['order.close', 'order.auto-review']);
    expect(error.message).toContain('did you mean "order.close"?');
    expect(new UnknownTaskTypeError('invoice.send', ['order.close']).message).not.toContain(
      'did you mean',
    );
  });
});

describe('the ambientTransaction option', () => {
  it('takes an object with current and runHandler, and names what is missing', () => {
    const ambient = {
      current: () => undefined,
      runHandler: <T>(_: unknown, run: () => Promise<T>) => run(),
    };
    expect(resolveDelayOptions({ ambientTransaction: ambient }).ambientTransaction).toBe(ambient);
    expect(() =>
      resolveDelayOptions({ ambientTransaction: { current: () => undefined } as never }),
    ).toThrow(
      /ambientTransaction must have the functions current and runHandler .*runHandler is undefined/,
    );
  });
});
