// console.mjs uses the dashboard (/app) in a browser of its own, the way a
// person does: it reads labels and roles, fills forms, presses buttons and
// waits for what the pages show. It runs one journey and prints one JSON
// line on stdout with what it saw, for the Go test to check.
//
//   node console.mjs live     '<json>'   sign up, create, launch, drive the
//                                        page from an automation client and
//                                        through the live view, release
//   node console.mjs webhooks '<json>'   a failing webhook endpoint, its
//                                        failed delivery, and its retry
//   node console.mjs viewer   '<json>'   an invitation as viewer, what the
//                                        viewer is shown, and forged posts
//   node console.mjs keeper   '<json>'   a forgotten password reset through
//                                        the mail, an API key, a proxy tested
//                                        and checked, browser data, cookies
//                                        and the time machine
//
// The JSON argument holds the base URL and what the journey needs (its
// accounts, the addresses of the Go test's receiver). CHROMIUM_PATH is the
// person's browser: a second Chromium, apart from the profile's browser
// that the service runs.
//
// Every page of the person's browser is watched: a JavaScript error or a
// console error (a Content-Security-Policy violation is one) is reported
// in "problems", except the refusals a journey provokes on purpose.
import { readFile } from 'node:fs/promises';
import { chromium } from 'playwright-core';

const [journey, rawArgs] = process.argv.slice(2);
const journeys = { live, webhooks, viewer, keeper };
if (!journeys[journey] || !rawArgs) {
  console.error('usage: node console.mjs live|webhooks|viewer|keeper <json>');
  process.exit(2);
}
const args = JSON.parse(rawArgs);
const base = args.base;

// WAIT bounds every wait of a journey.
const WAIT = 60_000;

// until polls fn until it returns a truthy value, which it returns, and
// fails saying what it awaited once WAIT has passed.
async function until(what, fn, timeout = WAIT) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = undefined;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      throw new Error(`timed out after ${timeout / 1000} s waiting for ${what}${last ? ': ' + last.message : ''}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

// problems are what the person's pages logged as errors; expected holds
// the patterns of the errors a journey provokes on purpose just now.
const problems = [];
let expected = [];

function watch(page, who) {
  page.on('console', (m) => {
    const text = m.text();
    const csp = /Content Security Policy|CSP violation/i.test(text);
    if (m.type() !== 'error' && !csp) return;
    if (!csp && expected.some((re) => re.test(text))) return;
    problems.push(`${who} ${m.type()} on ${page.url()}: ${text}`);
  });
  page.on('pageerror', (e) => problems.push(`${who} script error on ${page.url()}: ${e.message}`));
}

// person opens a browser context for one person, every page of which is
// watched, and reports CSP violations as console errors.
async function person(browser, who) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(WAIT);
  context.setDefaultNavigationTimeout(WAIT);
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'}`);
    });
  });
  context.on('page', (p) => watch(p, who));
  return context;
}

async function signUp(page, account) {
  await page.getByLabel('Name').fill(account.name);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
}

// flash is the one-line message the page shows after an action.
async function flash(page) {
  const f = page.locator('p.flash[role="status"]');
  await f.waitFor();
  return (await f.textContent()).trim();
}

// details reads a definition list as {term: description}.
async function details(list) {
  return list.evaluate((dl) => {
    const out = {};
    for (const dt of dl.querySelectorAll(':scope > dt')) {
      const dd = dt.nextElementSibling;
      if (dd && dd.tagName === 'DD') out[dt.textContent.trim()] = dd.textContent.trim();
    }
    return out;
  });
}

async function createProfile(page, name, template, notes) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Profiles' }).click();
  await page.getByRole('link', { name: 'New profile' }).click();
  await page.getByLabel('Name', { exact: true }).fill(name);
  if (template) await page.getByRole('combobox', { name: 'Template' }).selectOption({ label: template });
  if (notes) await page.getByLabel('Notes', { exact: true }).fill(notes);
  await page.getByRole('button', { name: 'Create the profile' }).click();
  await page.waitForURL(/\/app\/profiles\/prf_[^/]+$/);
  return { id: new URL(page.url()).pathname.split('/').pop(), flash: await flash(page) };
}

// The page the automation client opens: a button over most of the page
// that turns the page green and sets a flag when clicked.
const testPage = 'data:text/html,<!doctype html><title>live</title>' +
  '<style>html,body{margin:0;height:100%}button{display:block;width:100%;height:80vh;font-size:40px;background:%23c00;color:white;border:0}</style>' +
  `<button id=b onclick="document.body.dataset.clicked='yes';this.style.background='%2300c000';this.textContent='clicked'">click me</button>`;

const isRed = (p) => p && p.r > 150 && p.g < 90 && p.b < 90;
const isGreen = (p) => p && p.g > 130 && p.r < 90 && p.b < 90;

// screenPixel reads the live picture where the button is, left of its
// label, by drawing the picture on a canvas; src is a digest (FNV-1a) of
// the picture's address, which holds the whole frame.
function screenPixel(page) {
  return page.evaluate(() => {
    const img = document.getElementById('live-screen');
    if (!img || !img.complete || !img.naturalWidth) return null;
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const [r, gr, b] = g.getImageData(Math.floor(c.width / 10), Math.floor(c.height / 3), 1, 1).data;
    let h = 0x811c9dc5;
    for (let i = 0; i < img.src.length; i++) h = Math.imul(h ^ img.src.charCodeAt(i), 0x01000193);
    return { r, g: gr, b, src: (h >>> 0).toString(16) + ':' + img.src.length };
  });
}

// live: sign up, create a profile from a template, launch it, work in its
// page from an automation client and through the live view, release it.
async function live(browser) {
  const out = {};
  const context = await person(browser, 'owner');
  const page = await context.newPage();
  await page.goto(base + '/app/signup');
  await signUp(page, args.owner);
  await page.getByRole('button', { name: 'Create the account' }).click();
  await page.waitForURL('**/app/profiles');
  out.welcome = await flash(page);
  out.emptyList = (await page.locator('p.empty').textContent()).trim();

  const created = await createProfile(page, args.profile, args.template);
  out.profileId = created.id;
  out.created = created.flash;
  out.heading = (await page.getByRole('heading', { level: 1 }).textContent()).trim();
  out.fingerprint = await details(page.locator('section.device dl.fingerprint'));
  out.statusBefore = (await page.locator(`[data-status-of="${out.profileId}"]`).textContent()).trim();

  // Headless, ticked from the keyboard; then Launch.
  await page.getByLabel('headless').focus();
  await page.keyboard.press('Space');
  if (!(await page.getByLabel('headless').isChecked())) throw new Error('Space did not tick headless');
  await page.getByRole('button', { name: 'Launch' }).click();
  const cdpField = page.getByLabel('cdpUrl');
  await cdpField.waitFor();
  out.cdpUrl = await cdpField.inputValue();
  out.snippets = {
    playwright: await page.getByLabel('Playwright').inputValue(),
    puppeteer: await page.getByLabel('Puppeteer').inputValue(),
    chromedp: await page.getByLabel('chromedp').inputValue(),
  };
  out.launchStatus = (await page.locator(`[data-status-of="${out.profileId}"]`).textContent()).trim();

  // The automation client opens the test page and stays connected.
  const auto = await chromium.connectOverCDP(out.cdpUrl, { timeout: WAIT });
  try {
    const autoContext = auto.contexts()[0];
    if (!autoContext) throw new Error("the profile's browser has no default context");
    const autoPage = await autoContext.newPage();
    await autoPage.goto(testPage, { timeout: WAIT });

    // A second tab keeps the profile list open, to watch the status
    // change by itself; the mark shows the tab is never reloaded.
    const list = await context.newPage();
    await list.goto(base + '/app/profiles');
    const badge = list.locator(`[data-status-of="${out.profileId}"]`);
    out.listStatusRunning = (await badge.textContent()).trim();
    await list.evaluate(() => { window.stillTheSamePage = true; });

    // The profile page, reached from the list, shows no token any more.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Profiles' }).click();
    await page.getByRole('link', { name: args.profile, exact: true }).click();
    await page.waitForURL(new RegExp('/app/profiles/' + out.profileId + '$'));
    out.profilePageCdpFields = await page.getByLabel('cdpUrl').count();
    out.profilePageText = await page.locator('section.session').innerText();

    await page.getByRole('link', { name: 'Open the live view' }).click();
    await page.waitForURL('**/live');
    const screen = page.getByRole('img', { name: "The browser's page, live" });
    await until('a first frame in the live view', async () => Number(await screen.getAttribute('data-frames')) > 0);
    const red = await until('a frame that shows the red button', async () => {
      const p = await screenPixel(page);
      return isRed(p) && p;
    });
    out.before = { r: red.r, g: red.g, b: red.b };
    out.framesBeforeClick = Number(await screen.getAttribute('data-frames'));
    out.liveState = (await page.locator('#live-state').textContent()).trim();

    const box = await screen.boundingBox();
    await screen.click({ position: { x: box.width / 2, y: box.height / 3 } });
    await autoPage.waitForFunction(() => document.body.dataset.clicked === 'yes', null, { timeout: WAIT });
    out.automationSees = await autoPage.evaluate(() => ({
      clicked: document.body.dataset.clicked,
      label: document.getElementById('b').textContent,
    }));
    const green = await until('a frame that shows the page after the click', async () => {
      const p = await screenPixel(page);
      return isGreen(p) && p;
    });
    out.after = { r: green.r, g: green.g, b: green.b };
    out.srcChanged = green.src !== red.src;
    out.framesAfterClick = Number(await screen.getAttribute('data-frames'));

    // Release from the profile page.
    await page.getByRole('link', { name: 'Back to the profile' }).click();
    await page.getByRole('button', { name: 'Release' }).click();
    out.released = await flash(page);
    out.profileStatusAfter = (await page.locator(`[data-status-of="${out.profileId}"]`).textContent()).trim();
    out.launchAgain = await page.getByRole('button', { name: 'Launch' }).count();

    // The list tab, untouched, comes to say idle.
    await until('the list to show the profile idle', async () => (await badge.textContent()).trim() === 'idle');
    out.listStatusAfter = (await badge.textContent()).trim();
    out.listNotReloaded = await list.evaluate(() => window.stillTheSamePage === true);
  } finally {
    await auto.close().catch(() => {});
  }
  await context.close();
  return out;
}

// webhooks: a webhook endpoint whose receiver fails, the failed delivery
// shown in Settings, and its retry once the receiver answers.
async function webhooks(browser) {
  const out = {};
  const context = await person(browser, 'owner');
  const page = await context.newPage();
  await page.goto(base + '/app/signup');
  await signUp(page, args.owner);
  await page.getByRole('button', { name: 'Create the account' }).click();
  await page.waitForURL('**/app/profiles');

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
  const settings = page.getByRole('navigation', { name: 'Settings' });
  await settings.getByRole('link', { name: 'Webhooks', exact: true }).click();
  out.noEndpoints = (await page.locator('p.empty').textContent()).trim();
  await page.getByRole('link', { name: 'New endpoint' }).click();
  await page.getByLabel('URL').fill(args.receiver);
  await page.getByLabel('profile.created', { exact: true }).check();
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  await page.getByRole('heading', { name: 'Webhook endpoint created' }).waitFor();
  out.secret = await page.getByLabel('Signing secret').inputValue();
  out.endpoint = await details(page.locator('main dl').first());

  const created = await createProfile(page, args.profile);
  out.profileId = created.id;

  // The delivery fails through its schedule; the page is loaded again
  // until it lists it.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
  await settings.getByRole('link', { name: 'Failed deliveries' }).click();
  out.hint = (await page.locator('main p.hint').first().textContent()).trim();
  const card = page.getByRole('article').filter({ hasText: 'profile.created' });
  await until('the failed delivery in Settings > Webhooks > Failed deliveries', async () => {
    if ((await card.count()) > 0) return true;
    await page.reload();
    return false;
  });
  out.delivery = await details(card.locator('dl'));
  out.attempts = await card.getByRole('table', { name: 'Attempts' }).locator('tbody tr').evaluateAll((rows) =>
    rows.map((r) => [...r.cells].map((c) => c.textContent.trim())));

  // The receiver is told to answer 200 from now on, then Retry.
  const ok = await fetch(args.accept, { method: 'POST' });
  if (!ok.ok) throw new Error(`the receiver's switch answered ${ok.status}`);
  await card.getByRole('button', { name: 'Retry' }).click();
  out.retried = await flash(page);
  out.failedAfterRetry = await page.getByRole('article').filter({ hasText: out.delivery['Event id'] }).count();
  await context.close();
  return out;
}

// viewer: the owner invites a viewer from the Team page; the viewer
// accepts through the mailed link, switches teams, is shown no action it
// may not take, and has its forged posts refused.
async function viewer(browser) {
  const out = {};
  const ownerContext = await person(browser, 'owner');
  const owner = await ownerContext.newPage();
  await owner.goto(base + '/app/signup');
  await signUp(owner, args.owner);
  await owner.getByRole('button', { name: 'Create the account' }).click();
  await owner.waitForURL('**/app/profiles');
  out.ownerTeam = (await owner.locator('header .team').textContent()).trim();
  const created = await createProfile(owner, args.profile);
  out.profileId = created.id;

  await owner.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' }).click();
  const invite = owner.locator('section').filter({ has: owner.getByRole('heading', { name: 'Invite someone' }) });
  await invite.getByLabel('Email').fill(args.viewer.email);
  await invite.getByLabel('Role').selectOption('viewer');
  await invite.getByRole('button', { name: 'Send the invitation' }).click();
  out.invited = await flash(owner);
  out.memberRow = (await owner.getByRole('row').filter({ hasText: args.viewer.email }).innerText()).replace(/\s+/g, ' ').trim();

  // The invitation link, from the mail.
  const link = await until('the invitation mail', async () => {
    const res = await fetch(args.mail);
    return res.ok && (await res.text()).trim();
  });
  out.link = link;

  const viewerContext = await person(browser, 'viewer');
  const page = await viewerContext.newPage();
  await page.goto(link);
  await page.waitForURL('**/app/signin?next=*');
  await page.getByRole('link', { name: 'Create an account' }).click();
  await signUp(page, args.viewer);
  await page.getByLabel('Password').press('Enter');
  await page.waitForURL('**/app/invitations/accept?token=*');
  out.tokenPrefilled = (await page.getByLabel('Invitation token').inputValue()) !== '';
  await page.getByRole('button', { name: 'Join the team' }).click();
  await page.waitForURL('**/app/profiles');
  out.joined = await flash(page);

  // Switch to the viewer's own team, then to the owner's.
  const teamSelect = page.getByLabel('Team', { exact: true });
  out.teamOptions = (await teamSelect.locator('option').allTextContents()).map((s) => s.trim());
  const own = out.teamOptions.find((o) => o.endsWith('(owner)'));
  const shared = out.teamOptions.find((o) => o.endsWith('(viewer)'));
  if (!own || !shared) throw new Error('the team switch offers ' + JSON.stringify(out.teamOptions));
  await teamSelect.selectOption({ label: own });
  await page.getByRole('button', { name: 'Switch' }).click();
  out.switchedOwn = await flash(page);
  out.ownList = {
    profileLinks: await page.getByRole('link', { name: args.profile, exact: true }).count(),
    newProfile: await page.getByRole('link', { name: 'New profile' }).count(),
  };
  await page.getByLabel('Team', { exact: true }).selectOption({ label: shared });
  await page.getByRole('button', { name: 'Switch' }).click();
  out.switchedShared = await flash(page);
  out.sharedList = {
    profileLinks: await page.getByRole('link', { name: args.profile, exact: true }).count(),
    newProfile: await page.getByRole('link', { name: 'New profile' }).count(),
    createFirst: await page.getByRole('link', { name: 'Create the first one' }).count(),
  };

  await page.getByRole('link', { name: args.profile, exact: true }).click();
  await page.waitForURL(new RegExp('/app/profiles/' + out.profileId + '$'));
  out.profileButtons = {};
  for (const name of ['Launch', 'Release']) out.profileButtons[name] = await page.getByRole('button', { name }).count();
  for (const name of ['Edit', 'Delete']) out.profileButtons[name] = await page.getByRole('link', { name, exact: true }).count();

  // Forged posts from the viewer's own page, as a script of it would send.
  expected = [/status of 403/];
  out.forged = await page.evaluate(async (id) => {
    const send = async (path, form) => {
      const res = await fetch(path, { method: 'POST', body: new URLSearchParams(form) });
      const text = await res.text();
      const heading = /<div class="problem" role="alert">\s*<h[12]>([^<]*)<\/h[12]>/.exec(text);
      return { status: res.status, heading: heading ? heading[1] : '' };
    };
    return {
      create: await send('/app/profiles/new', { name: 'Forged by a viewer', template: 'tpl_chrome_win_us' }),
      launch: await send(`/app/profiles/${id}/launch`, { headless: 'on' }),
      edit: await send(`/app/profiles/${id}/edit`, { name: 'Renamed by a viewer', template: 'tpl_chrome_win_us', version: '1' }),
      remove: await send(`/app/profiles/${id}/delete`, {}),
    };
  }, out.profileId);
  expected = [];
  await viewerContext.close();
  await ownerContext.close();
  return out;
}

// rows reads the body rows of a table as lists of cell texts.
async function rows(table) {
  return table.locator('tbody tr').evaluateAll((trs) =>
    trs.map((r) => [...r.cells].map((c) => c.textContent.replace(/\s+/g, ' ').trim())));
}

// section is the section of the page headed name.
function section(page, name) {
  return page.locator('section').filter({ has: page.getByRole('heading', { name, exact: true }) });
}

// keeper: someone who forgot their password resets it through the mailed
// link, makes an API key for a program and revokes it, adds a proxy after
// testing it and checks it, and keeps a profile's browser data, cookies
// and settings with the time machine.
async function keeper(browser) {
  const out = {};
  const context = await person(browser, 'keeper');
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await context.newPage();
  const main = page.getByRole('navigation', { name: 'Main' });
  await page.goto(base + '/app/signup');
  await signUp(page, args.owner);
  await page.getByRole('button', { name: 'Create the account' }).click();
  await page.waitForURL('**/app/profiles');
  await page.getByRole('button', { name: /^Sign out/ }).click();
  await page.waitForURL('**/app/signin');
  out.signedOut = await flash(page);

  // 1. The password is forgotten: the mail's link leads to a new one.
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  await page.getByLabel('Email').fill(args.owner.email);
  await page.getByRole('button', { name: 'Send the link' }).click();
  out.resetAsked = await flash(page);
  const link = await until('the password reset mail', async () => {
    const res = await fetch(args.mail);
    return res.ok && (await res.text()).trim();
  });
  out.resetLink = link;
  await page.goto(link);
  out.resetHeading = (await page.getByRole('heading', { level: 1 }).textContent()).trim();
  out.resetTokenPrefilled = (await page.getByLabel('Reset token').inputValue()) !== '';
  await page.getByLabel('New password').fill(args.newPassword);
  await page.getByLabel('The same again').fill(args.newPassword);
  await page.getByRole('button', { name: 'Change the password' }).click();
  await page.waitForURL('**/app/signin');
  out.resetDone = await flash(page);

  // The old password is refused in words; the new one signs in.
  expected = [/status of 401/];
  await page.getByLabel('Email').fill(args.owner.email);
  await page.getByLabel('Password').fill(args.owner.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const refusal = page.getByRole('alert');
  await refusal.waitFor();
  out.oldPasswordRefused = (await refusal.innerText()).replace(/\s+/g, ' ').trim();
  expected = [];
  out.emailKept = await page.getByLabel('Email').inputValue();
  await page.getByLabel('Password').fill(args.newPassword);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL('**/app/profiles');
  out.signedInAs = (await page.getByRole('button', { name: /^Sign out/ }).textContent()).trim();

  // 2. An API key, shown once, copied, then revoked.
  await main.getByRole('link', { name: 'Settings' }).click();
  const settings = page.getByRole('navigation', { name: 'Settings' });
  await settings.getByRole('link', { name: 'API keys', exact: true }).click();
  out.noKeys = (await page.locator('p.empty').textContent()).trim();
  await page.getByRole('textbox', { name: /^Name/ }).fill(args.keyName);
  await page.getByRole('button', { name: 'Create key' }).click();
  out.keyHeading = (await page.getByRole('heading', { level: 2 }).first().textContent()).trim();
  out.keyWarning = (await page.locator('p.warn[role="alert"]').textContent()).trim();
  const keyField = page.getByLabel('Your new API key');
  out.key = await keyField.inputValue();
  out.keyDetails = await details(page.locator('main dl').first());
  const copy = page.getByRole('button', { name: 'Copy' });
  // The button says Copied for a moment: a watcher set up before the
  // click keeps what it said.
  await copy.evaluate((b) => {
    window.copySaid = [];
    new MutationObserver(() => window.copySaid.push(b.textContent.trim())).observe(b, { childList: true, characterData: true, subtree: true });
  });
  await copy.click();
  await until('the Copy button to say Copied', () => page.evaluate(() => window.copySaid.includes('Copied')));
  out.copied = await until('the key in the clipboard', () => page.evaluate(() => navigator.clipboard.readText()));
  // The Go test uses the key while it lives, through the API.
  const used = await fetch(args.keyCheck, { method: 'POST', body: out.key });
  if (!used.ok) throw new Error(`the key check answered ${used.status}`);
  await page.getByRole('link', { name: 'Back to your API keys' }).click();
  await page.waitForURL('**/app/settings/api-keys');
  out.keyListHoldsKey = (await page.content()).includes(out.key);
  out.keyRows = await rows(page.getByRole('table'));
  await page.getByRole('link', { name: 'Revoke ' + args.keyName, exact: true }).click();
  out.revokeHeading = (await page.getByRole('heading', { level: 2 }).textContent()).trim();
  await page.getByRole('button', { name: 'Revoke the key' }).click();
  out.revoked = await flash(page);
  out.keysAfterRevoke = (await page.locator('p.empty').textContent()).trim();

  // 3. A proxy by its short form: tested, added, checked.
  await main.getByRole('link', { name: 'Proxies' }).click();
  await page.getByRole('link', { name: 'Add or test a proxy' }).click();
  await page.getByRole('textbox', { name: /^Name/ }).fill(args.proxyName);
  await page.getByLabel('Proxy URL').fill(args.proxyUrl);
  await page.getByRole('button', { name: 'Test without saving' }).click();
  const result = page.locator('section.proxy-result');
  await result.waitFor();
  out.testHeading = (await result.getByRole('heading').textContent()).trim();
  out.tested = await details(result.locator('dl'));
  out.testShowsPassword = (await page.content()).includes(args.proxyPassword);
  out.testPasswordWarning = (await page.locator('main p.warn').textContent()).trim();
  out.testKeptName = await page.getByRole('textbox', { name: /^Name/ }).inputValue();
  await page.getByLabel('Proxy URL').fill(args.proxyUrl);
  await page.getByRole('button', { name: 'Add the proxy' }).click();
  await page.waitForURL(/\/app\/proxies\/prx_[^/]+$/);
  out.proxyId = new URL(page.url()).pathname.split('/').pop();
  out.proxyAdded = await flash(page);
  out.proxySettings = await details(section(page, 'Settings').locator('dl'));
  out.proxyStatusBefore = (await page.locator('.heading .status').textContent()).trim();
  await page.getByRole('button', { name: 'Check now' }).click();
  out.checked = await flash(page);
  out.proxyStatusAfter = (await page.locator('.heading .status').textContent()).trim();
  out.lastCheck = await details(section(page, 'Last check').locator('dl'));
  out.proxyPageShowsPassword = (await page.content()).includes(args.proxyPassword);
  await page.getByRole('link', { name: 'Back to the proxies' }).click();
  out.proxyRow = (await page.getByRole('row').filter({ hasText: args.proxyName }).innerText()).replace(/\s+/g, ' ').trim();

  // 4. A profile's browser data and cookies, and its time machine.
  const created = await createProfile(page, args.profile, undefined, args.notesBefore);
  out.profileId = created.id;
  await page.getByRole('navigation', { name: 'This profile' }).getByRole('link', { name: 'Browser data and cookies' }).click();
  await page.waitForURL('**/data');
  out.noData = (await page.locator('p.empty').first().textContent()).trim();
  await page.getByLabel('Archive').setInputFiles(args.archive);
  await page.getByRole('button', { name: 'Upload the archive' }).click();
  out.uploaded = await flash(page);
  const stored = section(page, 'Stored browser data');
  out.stored = await details(stored.locator('dl'));
  out.storedSha = await stored.locator('dl code').getAttribute('title');
  await page.getByLabel('Cookie file').setInputFiles(args.cookies);
  await page.getByRole('button', { name: 'Import the cookies' }).click();
  out.cookiesImported = await flash(page);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Export cookies (JSON)' }).click(),
  ]);
  out.exportName = download.suggestedFilename();
  const exportPath = await download.path();
  out.exported = JSON.parse(await readFile(exportPath, 'utf8'));

  await page.getByRole('navigation', { name: 'This profile' }).getByRole('link', { name: 'Time machine' }).click();
  await page.waitForURL('**/snapshots');
  out.noSnapshots = (await page.locator('p.empty').textContent()).trim();
  await page.getByRole('textbox', { name: /^Label/ }).fill(args.snapshotLabel);
  await page.getByRole('button', { name: 'Take a snapshot' }).click();
  out.snapshotTaken = await flash(page);
  out.snapshotRows = await rows(page.getByRole('table'));

  await page.getByRole('link', { name: '← ' + args.profile }).click();
  await page.getByRole('link', { name: 'Edit', exact: true }).click();
  out.notesInForm = await page.getByLabel('Notes', { exact: true }).inputValue();
  await page.getByLabel('Notes', { exact: true }).fill(args.notesAfter);
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForURL(new RegExp('/app/profiles/' + out.profileId + '$'));
  out.saved = await flash(page);
  out.notesShown = (await details(section(page, 'Settings').locator('dl')))['Notes'];

  await page.getByRole('navigation', { name: 'This profile' }).getByRole('link', { name: 'Time machine' }).click();
  await page.getByRole('row').filter({ hasText: args.snapshotLabel }).getByRole('link', { name: 'Compare and restore…' }).click();
  await page.waitForURL('**/restore');
  out.restoreHeading = (await page.getByRole('heading', { level: 1 }).textContent()).trim();
  out.changes = await rows(page.getByRole('table'));
  await page.getByRole('button', { name: 'Restore this snapshot' }).click();
  await page.waitForURL('**/snapshots');
  out.restored = await flash(page);
  out.snapshotRowsAfter = await rows(page.getByRole('table'));
  await page.getByRole('link', { name: '← ' + args.profile }).click();
  out.notesAfterRestore = (await details(section(page, 'Settings').locator('dl')))['Notes'];
  await context.close();
  return out;
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH, headless: true, timeout: WAIT });
let result;
try {
  result = await journeys[journey](browser);
} finally {
  await browser.close();
}
result.problems = problems;
console.log(JSON.stringify(result));
