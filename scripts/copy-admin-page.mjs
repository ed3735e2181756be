// The admin page is plain files tsc does not emit: put them beside the compiled controller.
import { cpSync, rmSync } from 'node:fs';

rmSync('dist/src/admin/page', { recursive: true, force: true });
cpSync('src/admin/page', 'dist/src/admin/page', { recursive: true });
