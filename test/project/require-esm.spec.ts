import { execFileSync } from 'node:child_process';

// nest-delay is an ES module; CommonJS code (a Jest config, a script) can
// still require() it on the Node lines that load ES modules synchronously
// (20.19+, 22.12+, 24), through the exports' `default` condition: no
// top-level await anywhere in its graph. Runs the built package (npm test builds).
describe('require("nest-delay") from CommonJS', () => {
  it.each([
    'nest-delay',
    'nest-delay/testing',
    'nest-delay/admin',
    'nest-delay/pg',
    'nest-delay/kysely',
    'nest-delay/drizzle',
    'nest-delay/prisma',
    'nest-delay/mikro-orm',
    'nest-delay/cls',
  ])('loads %s', (name) => {
    const out = execFileSync(
      process.execPath,
      ['-e', `const m = require(${JSON.stringify(name)}); console.log(Object.keys(m).length > 0)`],
      { encoding: 'utf8' },
    );
    expect(out.trim()).toBe('true');
  });
});
