import { LIMIT, compare, markdown, median, type FigureDef } from '../../bench/ab-table.js';

const drain: FigureDef = { key: 'drain', label: 'drain ms', better: 'lower' };
const rate: FigureDef = { key: 'rate', label: 'effects/s', better: 'higher' };

describe("bench:ab's table", () => {
  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNull();
  });

  it("gives the median of each round's own ratio, not the ratio of the medians", () => {
    // Round 2 ran on a loaded machine: both builds slower, the ratio the same.
    const [row] = compare(
      [drain],
      [
        { before: { drain: 100 }, after: { drain: 110 } },
        { before: { drain: 1000 }, after: { drain: 1100 } },
        { before: { drain: 100 }, after: { drain: 300 } },
      ],
    );
    expect(row.before).toBe(100);
    expect(row.after).toBe(300);
    expect(row.roundRatios).toEqual([1.1, 1.1, 3]);
    expect(row.ratio).toBeCloseTo(1.1);
    expect(row.flagged).toBe(false);
  });

  it('flags a figure worse than the limit whichever way is better', () => {
    const rounds = [
      { before: { drain: 100, rate: 1000 }, after: { drain: 120, rate: 800 } },
      { before: { drain: 100, rate: 1000 }, after: { drain: 120, rate: 800 } },
    ];
    const [slower, fewer] = compare([drain, rate], rounds);
    expect(slower.worseBy).toBeCloseTo(1.2);
    expect(slower.flagged).toBe(true);
    // 800/s against 1,000/s: 1.25 times worse, though the ratio is below 1.
    expect(fewer.ratio).toBeCloseTo(0.8);
    expect(fewer.worseBy).toBeCloseTo(1.25);
    expect(fewer.flagged).toBe(true);
    const [faster] = compare(
      [rate],
      [{ before: { rate: 1000 }, after: { rate: 1000 * LIMIT * 2 } }],
    );
    expect(faster.flagged).toBe(false);
    expect(markdown([slower, faster])).toMatch(/drain ms .*\*\*worse 1\.2× > 1\.15×\*\*/);
  });

  it('leaves out a round where a build has no figure', () => {
    const [row] = compare(
      [drain],
      [
        { before: { drain: 100 }, after: { drain: null } },
        { before: { drain: 100 }, after: { drain: 105 } },
      ],
    );
    expect(row.roundRatios).toEqual([null, 1.05]);
    expect(row.ratio).toBeCloseTo(1.05);
    expect(markdown([row])).toContain('—, 1.05');
  });
});
