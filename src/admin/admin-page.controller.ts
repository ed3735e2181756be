import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Controller, Get, NotFoundException, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';

/** The page's files: beside this module in src/, copied beside it into dist/ by `npm run build`. */
const PAGE_DIR = fileURLToPath(new URL('./page/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface PageFile {
  type: string;
  body: Buffer;
}

/** Every file of the page, read once at start: nothing outside this list can be asked for. */
function readPage(): Map<string, PageFile> {
  const files = new Map<string, PageFile>();
  for (const name of readdirSync(PAGE_DIR)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { type, body: readFileSync(PAGE_DIR + name) });
  }
  if (!files.has('index.html'))
    throw new Error(`The admin page is missing: no index.html in ${PAGE_DIR}`);
  return files;
}

/**
 * `GET /admin`: the live admin page, plain HTML, CSS and ES modules served by
 * the app itself (no build step, nothing from a CDN). The shell holds no data
 * and needs no token; everything it shows comes from /admin/api with the
 * token the operator pastes. Mounted with the admin API, so without
 * ADMIN_TOKEN /admin is a 404 like any unknown path.
 */
@ApiExcludeController()
@Controller('admin')
export class AdminPageController {
  private readonly files = readPage();

  @Get()
  page(@Res() res: Response): void {
    this.send(res, 'index.html');
  }

  @Get('assets/:file')
  asset(@Param('file') file: string, @Res() res: Response): void {
    if (file === 'index.html' || !this.files.has(file)) {
      throw new NotFoundException(`No admin page asset named ${JSON.stringify(file)}`);
    }
    this.send(res, file);
  }

  private send(res: Response, name: string): void {
    const { type, body } = this.files.get(name)!;
    // Revalidated on each load: an upgrade never leaves an old script beside a new page.
    res.setHeader('Cache-Control', 'no-cache');
    res.type(type).send(body);
  }
}
