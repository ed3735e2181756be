/** The TypeORM DataSource the module writes delayed_task through (aliased in DelayModule). */
export const DELAY_DATA_SOURCE = Symbol('DELAY_DATA_SOURCE');
