// nest-delay/admin: the admin API and the live page, mounted with one import.
// Needs class-validator, class-transformer and @nestjs/swagger beside the package.
export { DelayAdminModule } from './admin.module.js';
export type { DelayAdminModuleOptions } from './admin.options.js';
