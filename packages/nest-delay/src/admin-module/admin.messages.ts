// Error text of the admin API in one place, each naming what was wrong.
export const adminTokenRequired = 'The admin API needs its token: Authorization: Bearer <token>';

export const tooManyFailures = (seconds: number) =>
  `Too many failed admin logins from this address; try again in ${seconds} s`;

export const invalidTaskId = (value: string) =>
  `id must be a task id (a positive integer of up to 19 digits); got ${JSON.stringify(value)}`;

export const taskIdNotFound = (id: string) => `No delayed task with id ${id}`;

export const invalidTaskType = (value: string) =>
  `type must be a task type: 1 to 200 characters, without NUL characters or unpaired surrogates; got ${JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}...` : value)}`;

export const unknownTaskType = (type: string, path: string) =>
  `No task type is named ${JSON.stringify(type)}: no handler for it here and nothing set for it at run time (GET ${path}/api/types lists them)`;

export const emptyLimitChange =
  'Give concurrency, rate or both (null removes that limit); DELETE goes back to the declared limits';

export const invalidEntity = (value: string) =>
  `entity must name a business object, such as order:42: 1 to 500 characters, without NUL characters or unpaired surrogates; got ${JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}...` : value)}`;

export const unexpectedBodyFields = (fields: string[]) =>
  fields.map((field) => `property ${field} should not exist`);

export const bodyNotAnObject = 'body must be empty or a JSON object';

export const adminOptionError = (option: string, problem: string) =>
  `DelayAdminModule.forRoot: ${option} ${problem}`;

export const guardRefused = 'The admin guard refused this request';
