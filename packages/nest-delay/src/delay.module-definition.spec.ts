import { getDataSourceToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { dataSourceToken } from './delay.module-definition.js';

// The module injects the app's DataSource by @nestjs/typeorm's token without
// importing @nestjs/typeorm (ESM-only): the two must stay equal.
describe('the DataSource token DelayModule injects', () => {
  it.each([undefined, 'default', 'orders'])('is @nestjs/typeorm’s for %p', (name) => {
    expect(dataSourceToken(name)).toBe(getDataSourceToken(name));
  });

  it('is the class the app imports from typeorm for the default DataSource', () => {
    expect(dataSourceToken(undefined)).toBe(DataSource);
  });
});
