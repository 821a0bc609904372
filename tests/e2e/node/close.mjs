// close.mjs does what a Puppeteer user does at the end of a script: it
// connects to the browser, has a page set a cookie, and closes the browser
// with browser.close(), which sends Browser.close.
//
//   node close.mjs <cdpUrl> <pageURL>
import puppeteer from 'puppeteer-core';

const [cdpUrl, pageURL] = process.argv.slice(2);
if (!cdpUrl || !pageURL) {
  console.error('usage: node close.mjs <cdpUrl> <pageURL>');
  process.exit(2);
}

const browser = await puppeteer.connect({ browserWSEndpoint: cdpUrl, protocolTimeout: 30000 });
const page = await browser.newPage();
await page.goto(pageURL, { timeout: 30000 });
await page.evaluate(() => { document.cookie = 'last=written-before-close; max-age=3600; path=/'; });
await browser.close();
console.log(JSON.stringify({ closed: true }));
