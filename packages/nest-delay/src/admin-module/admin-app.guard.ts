import {
  ForbiddenException,
  Inject,
  Injectable,
  Optional,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { lastValueFrom, isObservable } from 'rxjs';
import { ADMIN_APP_GUARD } from './admin.options.js';
import { guardRefused } from './admin.messages.js';

/**
 * The app's own guard (the `guard` option) on the page and every API route;
 * lets everything through when there is none. A guard that answers false is
 * a 403, as Nest makes it; one that throws decides its own answer.
 */
@Injectable()
export class AdminAppGuard implements CanActivate {
  constructor(@Optional() @Inject(ADMIN_APP_GUARD) private readonly guard?: CanActivate) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (!this.guard) return true;
    const answer = this.guard.canActivate(context);
    const allowed = isObservable(answer) ? await lastValueFrom(answer) : await answer;
    if (!allowed) throw new ForbiddenException(guardRefused);
    return true;
  }
}
