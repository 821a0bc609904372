// journey.mjs drives a browser of profilesvc the way a Playwright user does:
// it connects over CDP, opens a new page in the browser's own context and
// reports what that page sees as one JSON line on stdout.
//
//   node journey.mjs <cdpUrl> <pageURL> set   fingerprint values as the page
//                                             sees them, then a cookie and a
//                                             localStorage entry are written
//   node journey.mjs <cdpUrl> <pageURL> get   the page's cookie and
//                                             localStorage entry
//
// It leaves the browser running: on a browser from connectOverCDP,
// browser.close() ends the connection, not the browser.
import { chromium } from 'playwright-core';

const [cdpUrl, pageURL, mode] = process.argv.slice(2);
if (!cdpUrl || !pageURL || (mode !== 'set' && mode !== 'get')) {
  console.error('usage: node journey.mjs <cdpUrl> <pageURL> set|get');
  process.exit(2);
}

const browser = await chromium.connectOverCDP(cdpUrl, { timeout: 30000 });
try {
  const context = browser.contexts()[0];
  if (!context) {
    throw new Error('the browser has no default context');
  }
  const page = await context.newPage();
  await page.goto(pageURL, { timeout: 30000 });
  let result;
  if (mode === 'set') {
    result = await page.evaluate(async () => {
      const headers = await (await fetch('/headers')).json();
      return {
        userAgent: navigator.userAgent,
        platform: navigator.platform,
        language: navigator.language,
        timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        screenWidth: screen.width,
        screenHeight: screen.height,
        acceptLanguage: headers.acceptLanguage,
      };
    });
    await page.evaluate(() => {
      document.cookie = 'journey=c1; path=/; expires=Fri, 31 Dec 2060 23:59:59 GMT';
      localStorage.setItem('k', 'v1');
    });
  } else {
    result = await page.evaluate(() => ({
      cookie: document.cookie,
      storage: localStorage.getItem('k'),
    }));
  }
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
}
