// drive.mjs drives the browser of a profilesvc session with Playwright. It
// connects to the session's cdpUrl, opens a tab on a page and prints, as
// one JSON line, what the page sees: the profile's fingerprint and the
// cookies and localStorage that earlier visits left. It then leaves a
// cookie and a localStorage entry of its own and disconnects; the browser
// runs on until the session is released, which stores what it holds.
//
//   node drive.mjs <cdpUrl> <pageUrl>
import { chromium } from 'playwright-core';

const [cdpUrl, pageUrl] = process.argv.slice(2);
if (!cdpUrl || !pageUrl) {
  console.error('usage: node drive.mjs <cdpUrl> <pageUrl>');
  process.exit(2);
}

const browser = await chromium.connectOverCDP(cdpUrl);
try {
  // The profile's own context: its cookies and storage persist.
  const page = await browser.contexts()[0].newPage();
  await page.goto(pageUrl);
  const seen = await page.evaluate(() => ({
    title: document.title,
    userAgent: navigator.userAgent,
    language: navigator.language,
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    cookies: document.cookie,
    visits: localStorage.getItem('visits') ?? '',
  }));
  console.log(JSON.stringify({ client: 'playwright', ...seen }));
  await page.evaluate(() => {
    document.cookie = 'playwright=visited; path=/; max-age=31536000';
    const visits = localStorage.getItem('visits');
    localStorage.setItem('visits', visits ? `${visits},playwright` : 'playwright');
  });
} finally {
  // On a browser from connectOverCDP, close() ends the connection only.
  await browser.close();
}
