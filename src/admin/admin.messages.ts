// Error text of the admin API in one place, each naming what was wrong.
export const adminTokenRequired =
  'The admin API needs the admin token: Authorization: Bearer <ADMIN_TOKEN>';

export const tooManyFailures = (seconds: number) =>
  `Too many failed admin logins from this address; try again in ${seconds} s`;

export const invalidTaskId = (value: string) =>
  `id must be a task id (a positive integer of up to 19 digits); got ${JSON.stringify(value)}`;

export const taskIdNotFound = (id: string) => `No delayed task with id ${id}`;
