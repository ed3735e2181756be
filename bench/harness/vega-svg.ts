/** A vega-lite spec rendered to SVG by vega, headless: no browser, no canvas. */
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

export async function toSvg(spec: object): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec as TopLevelSpec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
