import { OverlapGauge } from './overlap-gauge.js';

describe('OverlapGauge', () => {
  it('runs a type it has not seen one after another, where its lead is measured alone', () => {
    expect(new OverlapGauge().together(['new'])).toBe(false);
  });

  it('runs a type whose handlers wait before their first statement together', () => {
    const gauge = new OverlapGauge();
    gauge.lead('calls-out', 1.2);
    expect(gauge.together(['calls-out'])).toBe(true);
  });

  it('runs a type whose handlers go straight to their first statement one after another', () => {
    const gauge = new OverlapGauge();
    for (let i = 0; i < 5; i++) gauge.lead('db-first', 0.03);
    expect(gauge.together(['db-first'])).toBe(false);
  });

  it('runs a claim together when any of its types waits before its first statement', () => {
    const gauge = new OverlapGauge();
    gauge.lead('db-first', 0.03);
    gauge.lead('calls-out', 40);
    expect(gauge.together(['db-first'])).toBe(false);
    expect(gauge.together(['db-first', 'calls-out'])).toBe(true);
  });

  it('follows a type whose handlers change what they do first, either way', () => {
    const gauge = new OverlapGauge();
    gauge.lead('changes', 0.03);
    for (let i = 0; i < 3; i++) gauge.lead('changes', 5);
    expect(gauge.together(['changes'])).toBe(true);
    for (let i = 0; i < 40; i++) gauge.lead('changes', 0.03);
    expect(gauge.together(['changes'])).toBe(false);
  });
});
