import { readFileSync } from 'node:fs';

// The Node majors `.ci/run` runs, and what names them. The main run (npm ci,
// lint, npm test, the PgBouncer run, the smoke) is on MAIN_NODE from the
// registry: the app's engines, its @types/node, the Docker image and the
// README name that major. The package's tests run again on the machine's own
// Node of SECOND_NODE_MAJOR: the package's engines name both majors, and no
// other.

const ci = readFileSync('.ci/run', 'utf8');
const app = JSON.parse(readFileSync('package.json', 'utf8'));
const pkg = JSON.parse(readFileSync('packages/nest-delay/package.json', 'utf8'));
/** The README's prose, its line breaks as spaces. */
const readme = readFileSync('README.md', 'utf8').replace(/\s+/g, ' ');
const pkgReadme = readFileSync('packages/nest-delay/README.md', 'utf8');
const dockerfile = readFileSync('Dockerfile', 'utf8');

const mainMatch = /^MAIN_NODE=(\d+)\.\d+\.\d+$/m.exec(ci);
const secondMatch = /^SECOND_NODE_MAJOR=(\d+)$/m.exec(ci);
const thirdMatch = /^THIRD_NODE=(\d+)\.\d+\.\d+$/m.exec(ci);
const third = Number(thirdMatch?.[1]);
const main = Number(mainMatch?.[1]);
const second = Number(secondMatch?.[1]);

/** `^X.Y.Z || ^A.B.C`: the ranges this test reads, as [major, minimum]. */
function caretRanges(range: string): Array<[number, string]> {
  return range.split('||').map((part) => {
    const match = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(part.trim());
    if (!match) throw new Error(`engines.node part "${part}" is not ^X.Y.Z`);
    return [Number(match[1]), `${match[1]}.${match[2]}.${match[3]}`];
  });
}

/** Lines of .ci/run that run something (comments left out). */
const ciLines = ci.split('\n').filter((line) => !/^\s*#/.test(line));
const firstLine = (pattern: RegExp) => ciLines.findIndex((line) => pattern.test(line));

describe('.ci/run', () => {
  it('names the main Node (a registry version) and the second major, an older one', () => {
    expect(mainMatch).not.toBeNull();
    expect(secondMatch).not.toBeNull();
    expect(second).toBeLessThan(main);
  });

  it('puts the registry Node first on PATH before npm ci, and nothing runs node or npm before that', () => {
    const download = firstLine(/^\w+="\$\(scripts\/registry-node\.sh "\$MAIN_NODE"\)"$/);
    const path = firstLine(/^export PATH="\$\w+:\$PATH"$/);
    const install = firstLine(/^npm ci\b/);
    expect(download).toBeGreaterThan(-1);
    expect(download).toBeLessThan(path);
    expect(path).toBeLessThan(install);
    // Before the PATH change, only the machine's node is looked up (for the second run).
    const before = ciLines.slice(0, path).join('\n');
    expect(before).not.toMatch(/^\s*(npm|node|npx)\s/m);
  });

  it("runs the second run on the machine's node, found before PATH changes, and checks its major", () => {
    const found = firstLine(/^machine_node="\$\(command -v node/);
    expect(found).toBeGreaterThan(-1);
    expect(found).toBeLessThan(firstLine(/^export PATH=/));
    expect(ci).toContain('"v$SECOND_NODE_MAJOR."*');
    expect(ci).toMatch(/^\s*scripts\/second-node\.sh "\$machine_node" /m);
  });
});

describe('the app runs on the main major', () => {
  it('names it in engines (and no other major), @types/node, the Docker image and the README', () => {
    expect(caretRanges(app.engines.node).map(([major]) => major)).toEqual([main]);
    expect(app.devDependencies['@types/node']).toMatch(new RegExp(`^\\^${main}\\.`));
    const images = [...dockerfile.matchAll(/^FROM\s+(\S+)/gim)].map((m) => m[1]);
    expect(images.length).toBeGreaterThan(0);
    for (const image of images) expect(image).toMatch(new RegExp(`^node:${main}-`));
    expect(readme).toContain(`Node.js ${main}, the Node CI runs the app on`);
  });
});

describe("nest-delay's engines", () => {
  const ranges = caretRanges(pkg.engines.node);

  it('names Node 20.19, 22.12 and the main major, the three CI runs, and no major CI does not run', () => {
    expect(second).toBe(20);
    expect(third).toBe(22);
    expect(ci).toMatch(/^scripts\/second-node\.sh "\$THIRD_NODE" /m);
    expect(ranges.map(([major]) => major)).toEqual([second, third, main]);
    expect(ranges[0][1]).toBe('20.19.0');
    // require(esm), which the exports' default condition relies on, is unflagged from 22.12.
    expect(ranges[1][1]).toBe('22.12.0');
  });

  it('is what the READMEs say', () => {
    const prose = pkgReadme.replace(/\s+/g, ' ');
    expect(prose).toContain(
      `Node.js ${second} (20.19 or newer), ${third} (22.12 or newer) or ${main}, the three CI runs`,
    );
    expect(readme).toContain(`also runs on Node ${second}.19 or newer`);
  });
});
