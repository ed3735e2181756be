import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { delayMigrations } from 'nest-delay';
import { anchorsOf, relativeLinks } from '../package/readme-setup.js';

// What a reader of the package in node_modules can follow: the READMEs stay
// a page long, and every link in the markdown the tarball ships resolves in
// the tarball, or is a full URL to a file that exists in the repository.

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkgDir = join(root, 'packages/nest-delay');
const REPO = 'https://github.com/nest-delay/nest-delay/';
/** "Under 16 kB": a page a person reads. */
const README_LIMIT = 16_000;

/** The files `npm pack` would put in the tarball (no build needed for the markdown). */
function shippedFiles(): string[] {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: pkgDir,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`npm pack --dry-run failed:\n${r.stderr}`);
  const [packed] = JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>;
  return packed.files.map((f) => f.path);
}

const shipped = shippedFiles();
const pages = shipped.filter((f) => f.endsWith('.md'));
const text = (page: string) => readFileSync(join(pkgDir, page), 'utf8');
/** Prose only: fenced code blocks are shown, not followed. */
const prose = (markdown: string) => markdown.replace(/```[\s\S]*?```/g, '');

describe('README sizes', () => {
  it.each(['README.md', 'packages/nest-delay/README.md'])('%s is under 16 kB', (file) => {
    expect(statSync(join(root, file)).size).toBeLessThan(README_LIMIT);
  });
});

describe('links in the shipped markdown', () => {
  it('ships the README, the docs and the CHANGELOG', () => {
    expect(pages).toEqual(
      expect.arrayContaining(['README.md', 'CHANGELOG.md', 'docs/how-it-works.md']),
    );
  });

  it('resolves every relative link, and its heading, inside the tarball', () => {
    const dead: string[] = [];
    for (const page of pages) {
      for (const [path, anchor] of relativeLinks(text(page))) {
        const target = path === '' ? page : normalize(join(dirname(page), path));
        const where = `${page} → ${path}${anchor ? `#${anchor}` : ''}`;
        if (!shipped.includes(target)) dead.push(`${where} (not in the tarball)`);
        else if (anchor && !anchorsOf(text(target)).includes(anchor))
          dead.push(`${where} (no such heading)`);
      }
    }
    expect(dead).toEqual([]);
  });

  it('points full repository URLs at files the repository has, on main', () => {
    const dead: string[] = [];
    for (const page of pages) {
      // An image's `?raw=true` asks GitHub for the file itself: the path is what must exist.
      for (const [, url] of prose(text(page)).matchAll(/\]\((https:\/\/github\.com\/[^)\s#?]+)/g)) {
        if (!url.startsWith(REPO)) continue;
        const match = /^(?:blob|tree)\/main\/(.+)$/.exec(url.slice(REPO.length));
        if (url === REPO.slice(0, -1)) continue;
        if (!match || !existsSync(join(root, match[1]))) dead.push(`${page} → ${url}`);
      }
    }
    expect(dead).toEqual([]);
  });

  // A path in backticks reads as a file to open; one outside the package
  // (the repository's tests, bench, scripts) is not in node_modules.
  it('names no repository file the tarball lacks without linking to it', () => {
    const allowed: string[] = [];
    const unlinked: string[] = [];
    for (const page of pages) {
      for (const [, path] of prose(text(page)).matchAll(
        /(?<!\[)`((?:test|bench|scripts)\/[^`\s]*)`(?!\]\()/g,
      )) {
        if (existsSync(join(root, path)) && !allowed.includes(`${page}: ${path}`))
          unlinked.push(`${page}: ${path}`);
      }
    }
    expect(unlinked).toEqual([]);
  });
});

describe("the package README's Migrations", () => {
  it('lists every migration of delayMigrations, in order, and no other', () => {
    const readme = readFileSync(join(pkgDir, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Migrations'));
    const listed = section
      .slice(0, section.indexOf('\n## ', 3))
      .match(/`[A-Z][A-Za-z]+\d{13}`/g)
      ?.map((name) => name.slice(1, -1));
    expect(listed).toEqual(delayMigrations.map((m) => m.name));
  });
});
