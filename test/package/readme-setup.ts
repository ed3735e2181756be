// What a stranger copies out of the package README: the files it shows under
// a caption naming them, and the packages its `npm install` lines name. The
// pack-install test builds its consumer app from these and nothing else, so
// the README and a passing setup cannot drift apart.

/** Code blocks whose caption line (just before the fence) starts with `path` and ends with ':'. */
export function captionedFiles(markdown: string): Map<string, string> {
  const files = new Map<string, string>();
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith('```')) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (end === -1) throw new Error(`README: the code block at line ${i + 1} is never closed`);
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === '') k--;
    const caption = k >= 0 ? /^`([^`\s]+)`.*:$/.exec(lines[k]) : null;
    if (caption) {
      if (files.has(caption[1])) throw new Error(`README shows ${caption[1]} twice`);
      files.set(caption[1], lines.slice(i + 1, end).join('\n') + '\n');
    }
    i = end;
  }
  return files;
}

export interface Install {
  name: string;
  /** As written after the name's '@': '12', '~5.9', or '' for none. */
  range: string;
  dev: boolean;
}

/** The packages of every `npm install` line in the README's bash blocks. */
export function installLines(markdown: string): Install[] {
  const installs: Install[] = [];
  for (const [, block] of markdown.matchAll(/```bash\n([\s\S]*?)```/g)) {
    for (const line of block.split('\n')) {
      const words = line.trim().split(/\s+/);
      if (words[0] !== 'npm' || !['install', 'i'].includes(words[1])) continue;
      const dev = words.includes('-D') || words.includes('--save-dev');
      for (const word of words.slice(2).filter((w) => !w.startsWith('-'))) {
        // A packed tarball, ./nest-delay-0.4.0.tgz: the package at that version.
        const tarball = /(?:^|\/)(nest-delay)-(\d+\.\d+\.\d+)\.tgz$/.exec(word);
        if (tarball) {
          installs.push({ name: tarball[1], range: tarball[2], dev });
          continue;
        }
        const at = word.indexOf('@', 1);
        installs.push(
          at === -1
            ? { name: word, range: '', dev }
            : { name: word.slice(0, at), range: word.slice(at + 1), dev },
        );
      }
    }
  }
  return installs;
}

/** Whether `version` is within a README range: '' (any), 'N', 'N.M' or '~N.M'. */
export function withinRange(version: string, range: string): boolean {
  if (range === '') return true;
  const match = /^~?(\d+(?:\.\d+)?)$/.exec(range);
  if (!match)
    throw new Error(`README range ${range} is not one this test reads ('N', 'N.M', '~N.M')`);
  return version.startsWith(`${match[1]}.`);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Relative links of a markdown file outside code blocks: [target path, anchor]. */
export function relativeLinks(markdown: string): Array<[string, string]> {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  const links: Array<[string, string]> = [];
  for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target)) continue;
    const [path, anchor = ''] = target.split('#');
    links.push([path, anchor]);
  }
  return links;
}

/** The anchors of a markdown file's headings. */
export function anchorsOf(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/^#{1,6} (.*)$/gm)].map(([, heading]) => headingAnchor(heading));
}

/**
 * The README's lines that mount a module in the app it built: the first `ts`
 * block after `heading`, its `import` lines apart from the rest (an entry of
 * AppModule's imports), spliced into `appModule` after its last import and
 * after the line that names `after`.
 */
export function spliceModuleLines(
  markdown: string,
  heading: string,
  appModule: string,
  after: string,
): string {
  const section = markdown.slice(markdown.indexOf(`\n${heading}\n`));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error(`README: no ts block under ${heading}`);
  const lines = block.split('\n').filter((line) => line.trim() !== '');
  const imports = lines.filter((line) => line.startsWith('import '));
  const entry = lines.filter((line) => !line.startsWith('import ') && !line.startsWith('//'));
  const app = appModule.split('\n');
  const lastImport = app.findLastIndex((line) => line.startsWith('import '));
  const anchor = app.findIndex((line) => line.includes(after));
  if (lastImport === -1 || anchor === -1)
    throw new Error(`README: src/app.module.ts has no imports or no ${after}`);
  const indent = /^\s*/.exec(app[anchor])![0];
  return [
    ...app.slice(0, lastImport + 1),
    ...imports,
    ...app.slice(lastImport + 1, anchor + 1),
    ...entry.map((line) => indent + line),
    ...app.slice(anchor + 1),
  ].join('\n');
}
