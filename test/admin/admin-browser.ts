import { existsSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ADMIN_TOKEN } from './admin-test-app.js';

// The live page in a real browser: Debian's chromium driven by playwright-core.
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = 'test-artifacts';
export const hasChromium = existsSync(CHROMIUM);

/** `describe`, or `describe.skip` saying why when there is no Chromium. */
export function describeInChromium(what: string): jest.Describe {
  if (hasChromium) return describe;
  console.warn(`${what} skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);
  return describe.skip;
}

/** Listens on a free port of 127.0.0.1 and returns the app's base URL. */
export async function listen(app: INestApplication): Promise<string> {
  const server = app.getHttpServer() as http.Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

const pageErrors = new WeakMap<Page, string[]>();

/** A page that accepts every confirmation and collects its script errors (see errorsOf). */
export async function newPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1360, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('dialog', (dialog) => void dialog.accept());
  pageErrors.set(page, errors);
  return page;
}

export const errorsOf = (page: Page): string[] => pageErrors.get(page) ?? [];

export const textOf = (page: Page, selector: string) => page.locator(selector).first().innerText();

/** Opens /admin and signs in with the test token. */
export async function signIn(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/admin`);
  await page.fill('#token', ADMIN_TOKEN);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#nav:not([hidden])');
}
