// Error text in one place, each naming what was wrong.
export const duplicateHandler = (type: string, first: string, second: string) =>
  `Two handlers for delayed task type "${type}": ${first} and ${second}. A type must have exactly one handler.`;

export const unknownType = (type: string, known: string[]) =>
  `No handler for delayed task type "${type}" in this application (known: ${known.length ? known.join(', ') : 'none'}). ` +
  `Register one with @DelayedTaskHandler('${type}'), or set allowUnknownTypes for an app that only produces tasks.`;

export const noHandlerAtRun = (type: string) =>
  `No handler registered for task type "${type}" on the instance that ran it; dead-lettered.`;

export const taskNotFound = (ref: string | number) =>
  `No delayed task with id or key ${JSON.stringify(ref)}.`;

export const errorText = (error: unknown): string => {
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 4000);
  return String(error).slice(0, 4000);
};
