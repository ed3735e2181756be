import { WindowPolicy } from './window-policy.js';

describe('WindowPolicy', () => {
  const now = 1_000_000;
  const policy = () => new WindowPolicy({ windowMs: 60_000, instanceId: 'me', leaseMs: 30_000 });

  it('leases nothing and holds nothing while the instance is not running', () => {
    const p = policy();
    expect(p.leaseOnWrite(now, now, false)).toBeNull();
    expect(p.holds('me')).toBe(false);
  });

  it('leases a task written outside a transaction to itself when due before the horizon', () => {
    const p = policy();
    p.setRunning(true);
    expect(p.leaseOnWrite(now + 59_999, now, false)).toBe('me');
    expect(p.leaseOnWrite(now + 60_000, now, false)).toBeNull();
    expect(p.horizonMs(now)).toBe(now + 60_000);
  });

  it('leases an overdue task to itself too: it fires at once from the wheel', () => {
    const p = policy();
    p.setRunning(true);
    expect(p.leaseOnWrite(now - 3_600_000, now, false)).toBe('me');
  });

  it('holds and leases nothing again once the instance stops', () => {
    const p = policy();
    p.setRunning(true);
    p.setRunning(false);
    expect(p.isRunning).toBe(false);
    expect(p.holds('me')).toBe(false);
    expect(p.leaseOnWrite(now, now, false)).toBeNull();
  });

  it("leaves a task written in the caller's transaction to whichever loader finds it after commit", () => {
    const p = policy();
    p.setRunning(true);
    expect(p.leaseOnWrite(now, now, true)).toBeNull();
  });

  it('holds exactly the rows leased to this instance', () => {
    const p = policy();
    p.setRunning(true);
    expect(p.holds('me')).toBe(true);
    expect(p.holds('other')).toBe(false);
    expect(p.holds(null)).toBe(false);
  });
});
