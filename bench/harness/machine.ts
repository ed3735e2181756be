import { readFileSync } from 'node:fs';
import os from 'node:os';
import { Redis } from 'ioredis';
import { REDIS_URL, serverVersion } from './db.js';

const LIBRARIES = [
  'bullmq',
  'ioredis',
  'pg-boss',
  'graphile-worker',
  'typeorm',
  'pg',
  '@nestjs/core',
  'autocannon',
  'vega',
  'vega-lite',
];

function versionOf(name: string): string {
  try {
    return (
      JSON.parse(readFileSync(`node_modules/${name}/package.json`, 'utf8')) as { version: string }
    ).version;
  } catch {
    return 'unknown';
  }
}

export async function redisVersion(): Promise<string> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown';
  } catch {
    return 'unreachable';
  } finally {
    redis.disconnect();
  }
}

/** What the figures were measured on. */
export async function describeMachine() {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    postgres: await serverVersion(),
    redis: await redisVersion(),
  };
}

export function libraryVersions(): Record<string, string> {
  const project = JSON.parse(readFileSync('package.json', 'utf8')) as {
    name: string;
    version: string;
  };
  return {
    [project.name]: project.version,
    ...Object.fromEntries(LIBRARIES.map((name) => [name, versionOf(name)])),
  };
}
