// The flow with @hey-api/openapi-ts's SDK and the fetch client it bundles:
// register, create an API key, and with that key create a profile, launch
// it and release it. Usage: node hey-api.js BASE_URL
import { createClient } from "./generated/hey-api/client/index.js";
import { createApiKey, createProfile, getProfile, launchProfile, register, releaseProfile } from "./generated/hey-api/index.js";

const base = process.argv[2];
if (!base) {
  throw new Error("usage: hey-api.js BASE_URL");
}
// A template of the built-in catalogue (the document lists them).
const templateId = "tpl_chrome_win_us";

// answered throws unless the call answered with the status want, and
// returns its body.
function answered<T>(step: string, want: number, res: { data?: T; error?: unknown; response?: Response }): T {
  if (res.response?.status !== want || res.data === undefined) {
    throw new Error(`${step}: status ${res.response?.status}, want ${want}: ${JSON.stringify(res.error ?? res.data)}`);
  }
  return res.data;
}

const client = createClient({ baseUrl: base });
const session = answered("register", 201, await register({
  client,
  body: { email: "hey-api@example.com", password: "generated hey-api client", name: "hey-api" },
}));
const key = answered("create an API key", 201, await createApiKey({
  client,
  headers: { Authorization: `Bearer ${session.data.accessToken}` },
  body: { name: "hey-api" },
}));

const withKey = createClient({ baseUrl: base, headers: { "X-API-Key": key.data.key } });
const created = answered("create a profile", 201, await createProfile({
  client: withKey,
  body: { name: "hey-api", templateId },
}));
if (created.data.status !== "idle") {
  throw new Error(`create a profile: status ${created.data.status}, want idle`);
}
const id = created.data.id;

const launched = answered("launch", 200, await launchProfile({ client: withKey, path: { id }, body: {} }));
if (!launched.data.session.cdpUrl) {
  throw new Error(`launch: no cdpUrl: ${JSON.stringify(launched)}`);
}
const running = answered("read the launched profile", 200, await getProfile({ client: withKey, path: { id } }));
if (running.data.status !== "running" || running.data.session === null) {
  throw new Error(`read the launched profile: status ${running.data.status}, want running with a session`);
}

// Release takes no body.
const released = answered("release", 200, await releaseProfile({ client: withKey, path: { id } }));
if (released.data.status !== "idle" || released.data.session !== null) {
  throw new Error(`release: status ${released.data.status}, want idle without a session`);
}
console.log("hey-api: register, API key, create, launch, release: ok");
