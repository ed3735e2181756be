import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Controller, Get, Inject, NotFoundException, Param, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AdminAppGuard } from './admin-app.guard.js';
import { ADMIN_OPTIONS, type AdminOptions } from './admin.options.js';

/** The page's files: beside this module, in src/ as in dist/ (the package's build copies them). */
const PAGE_DIR = fileURLToPath(new URL('./page/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Express's response, as far as it is used: its types are not a dependency of the package. */
interface PageResponse {
  setHeader(name: string, value: string): unknown;
  type(contentType: string): { send(body: Buffer): unknown };
}

interface PageFile {
  type: string;
  body: Buffer;
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

/**
 * Every file of the page, read once at start: nothing outside this list can
 * be asked for. index.html gets the module's path (in its asset links and a
 * meta tag the scripts read, so the page follows the mount), whether it asks
 * for a token, and what the timeline calls an entity.
 */
function readPage(options: AdminOptions): Map<string, PageFile> {
  const files = new Map<string, PageFile>();
  for (const name of readdirSync(PAGE_DIR)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { type, body: readFileSync(PAGE_DIR + name) });
  }
  const index = files.get('index.html');
  if (!index) throw new Error(`The admin page is missing: no index.html in ${PAGE_DIR}`);
  const values: Record<string, string> = {
    base: `${options.path}/`,
    token: options.token === undefined ? 'none' : 'bearer',
    entityName: options.entity.name,
    entityPrefix: options.entity.prefix,
  };
  const html = index.body
    .toString('utf8')
    .replace(/\{\{(\w+)\}\}/g, (match, key: string) =>
      key in values ? escapeHtml(values[key]) : match,
    );
  files.set('index.html', { type: index.type, body: Buffer.from(html, 'utf8') });
  return files;
}

/**
 * `GET <path>`: the live admin page, plain HTML, CSS and ES modules served by
 * the app itself (no build step, nothing from a CDN). The shell holds no data
 * and needs no token (the app's guard, if any, applies to it); everything it
 * shows comes from `<path>/api`.
 */
@ApiExcludeController()
@UseGuards(AdminAppGuard)
@Controller()
export class AdminPageController {
  private readonly files: Map<string, PageFile>;

  constructor(@Inject(ADMIN_OPTIONS) options: AdminOptions) {
    this.files = readPage(options);
  }

  @Get()
  page(@Res() res: PageResponse): void {
    this.send(res, 'index.html');
  }

  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() res: PageResponse): void {
    if (file === 'index.html' || !this.files.has(file)) {
      throw new NotFoundException(`No admin page asset named ${JSON.stringify(file)}`);
    }
    this.send(res, file);
  }

  private send(res: PageResponse, name: string): void {
    const { type, body } = this.files.get(name)!;
    // Revalidated on each load: an upgrade never leaves an old script beside a new page.
    res.setHeader('Cache-Control', 'no-cache');
    res.type(type).send(body);
  }
}
