// pages.mjs visits every page of the console, signed out, as the team's
// owner and as a viewer, at a desktop and a phone width. On each it runs
// axe-core, measures horizontal overflow and takes a full-page screenshot.
//
//   node pages.mjs <config.json>
//
// The config (written by console_pages_test.go) holds the console's base
// URL, the accounts and the ids of what the test arranged through the API.
// The screenshots go to SCREENSHOTS_DIR (default: a new temporary
// directory), named <page>-<width>.png. The report is one JSON line on
// stdout: {screenshots, results: [{page, as, width, url, status,
// violations, scrollWidth, clientWidth, overflowing, error}]}.
import { chromium } from 'playwright-core';
import { readFileSync, mkdirSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [configPath] = process.argv.slice(2);
if (!configPath) {
  console.error('usage: node pages.mjs <config.json>');
  process.exit(2);
}
const cfg = JSON.parse(readFileSync(configPath, 'utf8'));
const shots = process.env.SCREENSHOTS_DIR || mkdtempSync(join(tmpdir(), 'console-pages-'));
mkdirSync(shots, { recursive: true });

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const axeSource = readFileSync(axePath, 'utf8');
const widths = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
];
const step = 30000;
// The page the running profile's browser shows in the live view.
const livePage = 'data:text/html,' + encodeURIComponent(
  '<!doctype html><title>Example shop</title><body style="font:18px system-ui;margin:2rem;background:#fdf6e3">' +
  '<h1>Example shop</h1><p>Signed in as a test customer. The cart holds 2 items.</p>' +
  '<button style="font-size:18px;padding:.5rem 1rem">Checkout</button></body>');
const results = [];
// How axe got into the pages: "script tag" when the console's CSP lets
// page.addScriptTag's inline script run, else "evaluate" (CDP, not subject
// to the page's CSP).
let axeInjection = '';

// inject puts axe into the page. addScriptTag with a path adds an inline
// script, which the console's CSP (script-src 'self') refuses; the
// refusal shows as no window.axe, and the source is then evaluated
// through CDP instead.
async function inject(page) {
  if (await page.evaluate(() => typeof window.axe === 'object')) return;
  try {
    await page.addScriptTag({ path: axePath });
  } catch {
    // A refused script may also surface as an error: fall through.
  }
  if (await page.evaluate(() => typeof window.axe === 'object')) {
    axeInjection ||= 'script tag';
    return;
  }
  await page.evaluate(axeSource);
  axeInjection = 'evaluate';
}

// audit runs axe on the page as it is now, measures its overflow and
// takes its screenshot, at every width.
async function audit(page, name, as, status) {
  for (const vp of widths) {
    const r = { page: name, as, width: vp.width, url: page.url(), status };
    try {
      await page.setViewportSize(vp);
      // Let the layout settle after the resize.
      await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
      await inject(page);
      const axe = await page.evaluate(async () => {
        const res = await window.axe.run(document, { resultTypes: ['violations'] });
        return res.violations.map((v) => ({
          id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
          nodes: v.nodes.map((n) => ({ target: n.target.join(' '), impact: n.impact, summary: n.failureSummary })),
        }));
      });
      r.violations = axe;
      Object.assign(r, await page.evaluate(() => {
        const root = document.documentElement;
        const cw = root.clientWidth;
        const overflowing = [];
        // An element inside a scrolling box (a wide table in its
        // .table wrapper) widens that box, not the page.
        const clipped = (el) => {
          for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
            if (getComputedStyle(a).overflowX !== 'visible') return true;
          }
          return false;
        };
        for (const el of document.body.querySelectorAll('*')) {
          const box = el.getBoundingClientRect();
          // Past the edge itself, or its text spills past its box.
          const spills = getComputedStyle(el).overflowX === 'visible' && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0;
          if ((box.right > cw + 1 && box.width > 0) || spills) {
            if (clipped(el)) continue;
            // Name the element by its tag, id and classes.
            let sel = el.tagName.toLowerCase();
            if (el.id) sel += '#' + el.id;
            for (const c of el.classList) sel += '.' + c;
            overflowing.push(sel + ' (right edge ' + Math.round(box.right) + (spills ? ', content ' + el.scrollWidth + ' wide in ' + el.clientWidth : '') + ')');
            if (overflowing.length >= 8) break;
          }
        }
        return { scrollWidth: root.scrollWidth, clientWidth: cw, overflowing };
      }));
      await page.screenshot({ path: join(shots, `${name}-${vp.width}.png`), fullPage: true });
    } catch (err) {
      r.error = String(err && err.stack ? err.stack : err);
    }
    results.push(r);
  }
}

// visit loads path, checks the answer's status and audits the page.
async function visit(page, name, as, path, want = 200) {
  let status = 0;
  try {
    const resp = await page.goto(cfg.base + path, { timeout: step, waitUntil: 'load' });
    status = resp ? resp.status() : 0;
  } catch (err) {
    results.push({ page: name, as, width: 0, url: cfg.base + path, error: 'navigation: ' + err });
    return;
  }
  if (status !== want) {
    results.push({ page: name, as, width: 0, url: page.url(), status, error: `answered ${status}, want ${want}` });
  }
  await audit(page, name, as, status);
}

// submit runs act (which submits a form) and audits the page it leads to;
// ready is a selector that page must show.
async function submit(page, name, as, act, ready, want = 200) {
  let status = 0;
  try {
    const [resp] = await Promise.all([
      page.waitForNavigation({ timeout: step, waitUntil: 'load' }),
      act(),
    ]);
    status = resp ? resp.status() : 0;
    if (ready) await page.waitForSelector(ready, { timeout: step, state: 'attached' });
  } catch (err) {
    results.push({ page: name, as, width: 0, url: page.url(), status, error: 'submit: ' + err });
    return;
  }
  if (status !== want) {
    results.push({ page: name, as, width: 0, url: page.url(), status, error: `answered ${status}, want ${want}` });
  }
  await audit(page, name, as, status);
}

async function signIn(page, who) {
  await page.goto(cfg.base + '/app/signin', { timeout: step });
  await page.fill('#email', who.email);
  await page.fill('#password', who.password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith('/app/signin'), { timeout: step }), page.click('form.stack button[type=submit]')]);
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH, timeout: step });
try {
  const ctx = () => browser.newContext({ viewport: widths[0], deviceScaleFactor: 1, reducedMotion: 'reduce' });
  const id = cfg.ids;

  // Signed out.
  {
    const c = await ctx();
    const page = await c.newPage();
    const as = 'signed out';
    await visit(page, 'signin', as, '/app/signin');
    await submit(page, 'signin-failed', as, async () => {
      await page.fill('#email', cfg.owner.email);
      await page.fill('#password', 'not the password at all');
      await page.click('form.stack button[type=submit]');
    }, '.problem', 401);
    await visit(page, 'signup', as, '/app/signup');
    await visit(page, 'forgot', as, '/app/forgot-password');
    await submit(page, 'forgot-sent', as, async () => {
      await page.fill('#email', 'nobody@example.com');
      await page.click('form.stack button[type=submit]');
    }, '.flash');
    await visit(page, 'reset', as, '/app/reset-password?token=from-the-mail');
    await c.close();
  }

  // The viewer: their own, empty team first, then the owner's, which they
  // join by the invitation.
  {
    const c = await ctx();
    const page = await c.newPage();
    const as = 'viewer';
    await signIn(page, cfg.viewer);
    await visit(page, 'profiles-empty', as, '/app/profiles');
    await visit(page, 'accept', as, '/app/invitations/accept?token=' + encodeURIComponent(cfg.viewer.invitation));
    await submit(page, 'viewer-profiles', as, () => page.click('form.stack button[type=submit]'), 'table');
    await visit(page, 'viewer-profile', as, `/app/profiles/${id.alpha}`);
    await visit(page, 'viewer-data', as, `/app/profiles/${id.alpha}/data`);
    // A viewer is told that admins manage webhooks, with a 403.
    await visit(page, 'viewer-webhooks', as, '/app/settings/webhooks', 403);
    await c.close();
  }

  // The owner.
  {
    const c = await ctx();
    const page = await c.newPage();
    const as = 'owner';
    await signIn(page, cfg.owner);
    await visit(page, 'profiles', as, '/app/profiles');
    await visit(page, 'profiles-filtered', as, '/app/profiles?q=a&status=idle&tag=work');
    await visit(page, 'profile-new', as, '/app/profiles/new');
    await visit(page, 'profile', as, `/app/profiles/${id.alpha}`);
    await visit(page, 'profile-edit', as, `/app/profiles/${id.alpha}/edit`);
    await visit(page, 'profile-delete', as, `/app/profiles/${id.beta}/delete`);
    await visit(page, 'data', as, `/app/profiles/${id.alpha}/data`);
    await visit(page, 'data-delete', as, `/app/profiles/${id.alpha}/data/delete`);
    await visit(page, 'snapshots', as, `/app/profiles/${id.alpha}/snapshots`);
    await visit(page, 'snapshot-restore', as, `/app/profiles/${id.alpha}/snapshots/${id.snapshot}/restore`);
    await visit(page, 'snapshot-delete', as, `/app/profiles/${id.alpha}/snapshots/${id.snapshot}/delete`);

    // The running profile: the launch's answer (its cdpUrl and snippets),
    // the page read again, and its live view.
    await page.goto(cfg.base + `/app/profiles/${id.runner}`, { timeout: step });
    await submit(page, 'profile-launched', as, async () => {
      await page.check('input[name=headless]');
      await page.click('form[action$="/launch"] button[type=submit]');
    }, '#cdp-url');
    // An automation client opens a page in the running browser, so the
    // live view has something to show. It stays connected until the live
    // view is audited: the tab it opened is closed with its connection.
    let remote;
    try {
      remote = await chromium.connectOverCDP(await page.inputValue('#cdp-url'), { timeout: step });
      const tab = await remote.contexts()[0].newPage();
      await tab.goto(livePage, { timeout: step });
    } catch (err) {
      results.push({ page: 'live', as, width: 0, url: page.url(), error: 'opening a page in the running browser: ' + err });
    }
    await visit(page, 'profile-running', as, `/app/profiles/${id.runner}`);
    await page.goto(cfg.base + `/app/profiles/${id.runner}/live`, { timeout: step });
    try {
      // A frame has come and the picture shows it.
      await page.waitForFunction(() => {
        const img = document.getElementById('live-screen');
        return img && img.dataset.frames && img.complete && img.naturalWidth > 0;
      }, null, { timeout: step });
    } catch (err) {
      results.push({ page: 'live', as, width: 0, url: page.url(), error: 'no frame in the live view: ' + err });
    }
    await audit(page, 'live', as, 200);
    await remote?.close();

    await visit(page, 'settings-api-keys', as, '/app/settings/api-keys');
    await submit(page, 'settings-api-key-created', as, async () => {
      await page.fill('#key-name', 'Screenshots');
      await page.click('form[action="/app/settings/api-keys"] button[type=submit]');
    }, '#api-key');
    await visit(page, 'settings-api-key-revoke', as, `/app/settings/api-keys/${id.apiKey}/revoke`);
    await visit(page, 'settings-webhooks', as, '/app/settings/webhooks');
    await visit(page, 'settings-webhook-new', as, '/app/settings/webhooks/new');
    await submit(page, 'settings-webhook-created', as, async () => {
      await page.fill('#webhook-url', cfg.closedURL + '/created');
      await page.check('input[name=events] >> nth=0');
      await page.click('form[action="/app/settings/webhooks/new"] button[type=submit]');
    }, '#webhook-secret');
    await visit(page, 'settings-webhook-delete', as, `/app/settings/webhooks/${id.webhook}/delete`);
    await visit(page, 'settings-failed', as, '/app/settings/webhooks/failed');

    await visit(page, 'team', as, '/app/team');
    await visit(page, 'team-remove', as, `/app/team/members/${id.pendingMember}/remove`);

    await visit(page, 'proxies', as, '/app/proxies');
    await visit(page, 'proxy-new', as, '/app/proxies/new');
    await submit(page, 'proxy-tested', as, async () => {
      await page.selectOption('#type', 'http');
      await page.fill('#host', '127.0.0.1');
      await page.fill('#port', String(cfg.closedPort));
      await page.click('button[formaction="/app/proxies/test"]');
    }, '.proxy-result');
    await visit(page, 'proxy', as, `/app/proxies/${id.proxy}`);
    await visit(page, 'proxy-edit', as, `/app/proxies/${id.proxy}/edit`);
    await visit(page, 'proxy-delete', as, `/app/proxies/${id.proxy}/delete`);

    await visit(page, 'error-404', as, '/app/profiles/prf_nosuchprofile', 404);
    await c.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ screenshots: shots, axeInjection, results }));
