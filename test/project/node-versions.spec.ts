import { readFileSync } from 'node:fs';

// The package's `engines` names the Node majors CI runs its tests on, and no
// other: Node 20 (`npm test`) and the second major of `.ci/run`.

const pkg = JSON.parse(readFileSync('packages/nest-delay/package.json', 'utf8'));
const ci = readFileSync('.ci/run', 'utf8');
const readme = readFileSync('packages/nest-delay/README.md', 'utf8');

/** `^X.Y.Z || ^A.B.C`: the ranges this test reads, as [major, minimum]. */
function caretRanges(range: string): Array<[number, string]> {
  return range.split('||').map((part) => {
    const match = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(part.trim());
    if (!match) throw new Error(`engines.node part "${part}" is not ^X.Y.Z`);
    return [Number(match[1]), `${match[1]}.${match[2]}.${match[3]}`];
  });
}

describe("nest-delay's engines", () => {
  const ranges = caretRanges(pkg.engines.node);
  const second = /^SECOND_NODE=(\d+)\.(\d+\.\d+)$/m.exec(ci);

  it('names Node 20.19 and the second major CI runs, and no major CI does not run', () => {
    expect(second).not.toBeNull();
    expect(ranges.map(([major]) => major)).toEqual([20, Number(second![1])]);
    expect(ranges[0][1]).toBe('20.19.0');
  });

  it('is what the README says', () => {
    expect(readme).toContain(`Node.js 20 (20.19 or newer) or ${second![1]}, the two CI runs`);
  });
});
