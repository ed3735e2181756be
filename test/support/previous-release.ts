import { execFile, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  lstatSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

/**
 * The release a deploy replaces, built from git beside the current tree.
 *
 * Which one: the commit in `.ci/previous-release` (its first line that is not
 * a comment), moved forward each time a release lands; `PREVIOUS_RELEASE=<ref>`
 * in the environment overrides it (to try a deploy from an older release).
 */
export const PREVIOUS_RELEASE_FILE = '.ci/previous-release';

const ROOT = resolve('.');

function git(args: string[]): { ok: boolean; out: string } {
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  return { ok: result.status === 0, out: (result.stdout ?? '').trim() };
}

/** The previous release's commit, or why it cannot be had here (no git, a shallow clone). */
export function findPreviousRelease(): { commit?: string; missing?: string } {
  const ref =
    process.env.PREVIOUS_RELEASE ??
    (existsSync(join(ROOT, PREVIOUS_RELEASE_FILE))
      ? readFileSync(join(ROOT, PREVIOUS_RELEASE_FILE), 'utf8')
          .split('\n')
          .map((line) => line.trim())
          .find((line) => line !== '' && !line.startsWith('#'))
      : undefined);
  if (!ref) return { missing: `no commit in ${PREVIOUS_RELEASE_FILE}` };
  if (!git(['rev-parse', '--git-dir']).ok) return { missing: 'not a git checkout' };
  if (git(['rev-parse', '--is-shallow-repository']).out === 'true') {
    return { missing: `a shallow clone: the previous release (${ref}) needs the full history` };
  }
  const commit = git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  if (!commit.ok) return { missing: `the previous release ${ref} is not in this clone's history` };
  return { commit: commit.out };
}

/**
 * Its tree, installed and built (`npm run build`, as the release's own
 * scripts say) in a folder of the temp dir named after the commit, reused by
 * the next run while its `.built` mark is there. The tree comes from `git
 * archive`, so nothing is registered in this clone (no worktree to prune if
 * a run dies). Its node_modules links to ours when both package-lock.json
 * files install the same packages (the workspace's own versions aside),
 * workspace packages to the release's own; else `npm ci`. `bench:ab`
 * (bench/ab.ts) builds the commits it compares with it too.
 */
export async function buildPreviousRelease(commit: string): Promise<string> {
  const dir = join(tmpdir(), `nest-delay-release-${commit.slice(0, 12)}`);
  const built = join(dir, '.built');
  if (existsSync(built)) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const sh = promisify(execFile);
  await sh('sh', ['-c', 'git archive "$1" | tar -x -C "$2"', 'sh', commit, dir], { cwd: ROOT });
  if (sameInstalledPackages(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'))) {
    linkNodeModules(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  } else {
    await sh('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, timeout: 600_000 });
  }
  await sh('npm', ['run', 'build'], { cwd: dir, timeout: 600_000 });
  writeFileSync(built, `${commit}\n`);
  return dir;
}

/** Every installed entry of the two lockfiles alike, but the workspace links and the root's own. */
function sameInstalledPackages(ours: string, theirs: string): boolean {
  const installed = (file: string) => {
    const { packages = {} } = JSON.parse(readFileSync(file, 'utf8')) as {
      packages?: Record<string, { link?: boolean }>;
    };
    return JSON.stringify(
      Object.entries(packages).filter(
        ([path, entry]) => path.startsWith('node_modules/') && !entry.link,
      ),
    );
  };
  return installed(ours) === installed(theirs);
}

/**
 * A node_modules of links to ours, entry by entry: a whole-folder link would
 * resolve `nest-delay` (a workspace link, `../packages/nest-delay`) to the
 * current package instead of the release's.
 */
function linkNodeModules(from: string, to: string): void {
  mkdirSync(to);
  for (const name of readdirSync(from)) {
    const source = join(from, name);
    const stat = lstatSync(source);
    if (stat.isSymbolicLink() && /^(\.\.\/)+packages\//.test(readlinkSync(source))) {
      symlinkSync(readlinkSync(source), join(to, name));
    } else if (name.startsWith('@') && stat.isDirectory()) {
      linkNodeModules(source, join(to, name));
    } else {
      symlinkSync(source, join(to, name));
    }
  }
}
