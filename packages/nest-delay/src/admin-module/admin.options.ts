import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';

/** `DelayAdminModule.forRoot(options)`: where the page and its API live, and who may use them. */
export interface DelayAdminModuleOptions {
  /** Where the page is served; its API is under `${path}/api`. Default `/admin`. */
  path?: string;
  /**
   * The app's own guard, on the page and every API route: a class (built by
   * Nest in this module, with `imports` for what it injects) or an instance.
   * It must authenticate what a browser sends by itself (a session cookie, a
   * proxy's header): the page adds no header of its own but the token's.
   */
  guard?: Type<CanActivate> | CanActivate;
  /**
   * A bearer token (32 characters or more) every API route asks for, which the
   * page asks the operator for. With `guard` too, both must let a request in.
   */
  token?: string;
  /**
   * Neither guard nor token: anyone who reaches the app may read every task
   * and cancel, retry or reschedule it. Only behind something that already
   * keeps everyone else out (a private network, a proxy that authenticates).
   */
  unsafeNoAuth?: boolean;
  /** Rows the counts read per state at most; a state with more shows as capped. Default 100,000. */
  countCap?: number;
  /**
   * What the page's timeline calls an entity: `name` in its labels ("Order
   * timeline"), and `prefix` put before a bare id typed in its search (`order:`
   * reads `42` as `order:42`, a UUID in lower case). Default: "Entity", no prefix.
   */
  entity?: { name?: string; prefix?: string };
  /** Modules the guard's class needs for its own dependencies. */
  imports?: ModuleMetadata['imports'];
}

/** The options with every default filled in, checked. */
export interface AdminOptions {
  path: string;
  guard: Type<CanActivate> | CanActivate | undefined;
  token: string | undefined;
  countCap: number;
  entity: { name: string; prefix: string };
}

export const ADMIN_OPTIONS = Symbol('ADMIN_OPTIONS');
/** The app's guard, built or given. */
export const ADMIN_APP_GUARD = Symbol('ADMIN_APP_GUARD');
