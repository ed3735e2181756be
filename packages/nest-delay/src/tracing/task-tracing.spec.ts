import * as api from '@opentelemetry/api';
import { loadTaskTracing, TaskTracing } from './task-tracing.js';

describe('loadTaskTracing', () => {
  it('does not even import the API when tracing is off', async () => {
    let loaded = false;
    const load = async () => {
      loaded = true;
      return api;
    };
    expect(await loadTaskTracing(false, 'i', load)).toBeUndefined();
    expect(loaded).toBe(false);
  });

  it('is off, without a word, when the API is not installed', async () => {
    const missing = () => Promise.reject(new Error("Cannot find package '@opentelemetry/api'"));
    expect(await loadTaskTracing(true, 'i', missing)).toBeUndefined();
  });

  it('takes the API as named exports or as a default export', async () => {
    expect(await loadTaskTracing(true, 'i', async () => api)).toBeInstanceOf(TaskTracing);
    expect(await loadTaskTracing(true, 'i', async () => ({ default: api }))).toBeInstanceOf(
      TaskTracing,
    );
  });

  it('captures nothing and opens no spans while no SDK is registered', async () => {
    const tracing = (await loadTaskTracing(true, 'i', async () => api))!;
    expect(tracing.capture()).toBeNull();
    expect(tracing.pass()).toBeUndefined();
  });
});
