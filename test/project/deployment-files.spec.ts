import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';

// No Docker engine runs here, so the compose file and Dockerfile are checked as text.
const composeText = readFileSync('docker-compose.yml', 'utf8');
/** The compose file as `docker compose` reads it with no variable set: each `${NAME:-default}` its default. */
const compose = parse(composeText.replace(/\$\{\w+:-([^}]*)\}/g, '$1'));
const dockerfile = readFileSync('Dockerfile', 'utf8');
const readme = readFileSync('README.md', 'utf8');
/** The compiled probe (src/ops/health/probe.ts), as the runtime image holds it. */
const PROBE = 'dist/src/ops/health/probe.js';

describe('docker-compose.yml', () => {
  it('has a Postgres db service with a named volume and a healthcheck', () => {
    const db = compose.services.db;
    expect(db.image).toMatch(/^postgres:\d+/);
    const [volume] = db.volumes as string[];
    const name = volume.split(':')[0];
    expect(Object.keys(compose.volumes)).toContain(name);
    expect(db.healthcheck.test.join(' ')).toContain('pg_isready');
  });

  it('publishes Postgres on the loopback only, its credentials from the environment', () => {
    expect(compose.services.db.ports).toEqual(['127.0.0.1:5432:5432']);
    expect(composeText).toContain('POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-postgres}');
    expect(composeText).toContain('POSTGRES_USER: ${POSTGRES_USER:-postgres}');
    expect(composeText).toContain(
      'DATABASE_URL: postgres://${POSTGRES_USER:-postgres}:${POSTGRES_PASSWORD:-postgres}@db:5432/orders',
    );
    for (const port of compose.services.jaeger.ports as string[])
      expect(port).toMatch(/^127\.0\.0\.1:/);
  });

  it('builds the app from the Dockerfile and points DATABASE_URL at the db service', () => {
    const app = compose.services.app;
    expect(app.build).toBe('.');
    const url = new URL(app.environment.DATABASE_URL);
    expect(url.protocol).toBe('postgres:');
    expect(url.hostname).toBe('db');
    expect(url.pathname).toBe(`/${compose.services.db.environment.POSTGRES_DB}`);
    expect(url.username).toBe(compose.services.db.environment.POSTGRES_USER);
    expect(url.password).toBe(compose.services.db.environment.POSTGRES_PASSWORD);
    expect(app.depends_on.db.condition).toBe('service_healthy');
  });

  it("passes the users' token settings from the environment, none set by default", () => {
    const { environment } = compose.services.app;
    for (const name of [
      'AUTH_JWT_SECRET',
      'AUTH_JWKS_URL',
      'AUTH_ISSUER',
      'AUTH_AUDIENCE',
      'AUTH_DISABLED',
    ]) {
      expect(composeText).toContain(`${name}: \${${name}:-}`);
      expect(environment[name]).toBeNull();
    }
  });

  it("checks the app's readiness with the probe script the build produces", () => {
    const { healthcheck } = compose.services.app;
    expect(healthcheck.test).toEqual(['CMD', 'node', PROBE, '/health/ready']);
    expect(existsSync('src/ops/health/probe.ts')).toBe(true);
    expect(healthcheck.start_period).toBeDefined();
  });
});

describe('docker-compose.yml tracing', () => {
  it('has Jaeger all-in-one in a profile of its own, receiving OTLP over HTTP', () => {
    const jaeger = compose.services.jaeger;
    expect(jaeger.image).toMatch(/^jaegertracing\/all-in-one:\d+\.\d+/);
    expect(jaeger.profiles).toEqual(['tracing']);
    expect(jaeger.ports).toEqual(
      expect.arrayContaining(['127.0.0.1:16686:16686', '127.0.0.1:4318:4318']),
    );
    // Nothing else depends on it: a plain `docker compose up` never starts it.
    for (const [name, service] of Object.entries<any>(compose.services))
      if (name !== 'jaeger') expect(Object.keys(service.depends_on ?? {})).not.toContain('jaeger');
  });

  it("leaves the app's tracing off unless OTEL_EXPORTER_OTLP_ENDPOINT is given, as the README turns it on", () => {
    const { environment } = compose.services.app;
    expect(composeText).toContain('OTEL_EXPORTER_OTLP_ENDPOINT: ${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
    expect(environment.OTEL_EXPORTER_OTLP_ENDPOINT).toBeNull();
    expect(environment.OTEL_SERVICE_NAME).toBeDefined();
    expect(readme).toContain(
      'OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318 docker compose --profile tracing up',
    );
  });
});

describe('Dockerfile', () => {
  it('is multi-stage: a build stage, then a runtime stage running the compiled app', () => {
    const stages = [...dockerfile.matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/gim)].map((m) => m[2]);
    expect(stages).toEqual(['build', 'runtime']);
    expect(dockerfile).toMatch(/COPY --from=build \/app\/dist/);
    expect(dockerfile).toMatch(/CMD \["node", "dist\/src\/main\.js"\]/);
  });

  it('has a HEALTHCHECK on readiness, with the same probe as the compose file', () => {
    const healthcheck = /^HEALTHCHECK (.*?)\\\n\s*CMD (\[.*\])$/m.exec(dockerfile);
    expect(healthcheck).not.toBeNull();
    expect(healthcheck![1]).toMatch(/--start-period=\d+s/);
    expect(JSON.parse(healthcheck![2])).toEqual(['node', PROBE, '/health/ready']);
  });

  it('builds with the same commands as the README', () => {
    for (const command of ['npm ci', 'npm run build']) {
      expect(dockerfile).toContain(command);
      expect(readme).toContain(command);
    }
    const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
    expect(pkg.scripts['start:prod']).toBe('node dist/src/main.js');
  });
});
