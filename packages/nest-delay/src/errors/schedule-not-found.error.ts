/** No schedule has that name. */
export class ScheduleNotFoundError extends Error {
  constructor(readonly scheduleName: string) {
    super(`No schedule is named ${JSON.stringify(scheduleName)}`);
    this.name = 'ScheduleNotFoundError';
  }
}
