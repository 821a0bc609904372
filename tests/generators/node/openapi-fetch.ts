// The flow with openapi-fetch over openapi-typescript's types: register,
// create an API key, and with that key create a profile, launch it and
// release it. Usage: node openapi-fetch.js BASE_URL
import createClient from "openapi-fetch";
import type { paths } from "./generated/openapi-typescript/schema.js";

const base = process.argv[2];
if (!base) {
  throw new Error("usage: openapi-fetch.js BASE_URL");
}
// A template of the built-in catalogue (the document lists them).
const templateId = "tpl_chrome_win_us";

// answered throws unless the call answered with the status want, and
// returns its body.
function answered<T>(step: string, want: number, res: { data?: T; error?: unknown; response: Response }): T {
  if (res.response.status !== want || res.data === undefined) {
    throw new Error(`${step}: status ${res.response.status}, want ${want}: ${JSON.stringify(res.error ?? res.data)}`);
  }
  return res.data;
}

const client = createClient<paths>({ baseUrl: base });
const session = answered("register", 201, await client.POST("/api/v1/auth/register", {
  body: { email: "openapi-fetch@example.com", password: "generated openapi-fetch client", name: "openapi-fetch" },
}));
const key = answered("create an API key", 201, await client.POST("/api/v1/api-keys", {
  headers: { Authorization: `Bearer ${session.data.accessToken}` },
  body: { name: "openapi-fetch" },
}));

const withKey = createClient<paths>({ baseUrl: base, headers: { "X-API-Key": key.data.key } });
const created = answered("create a profile", 201, await withKey.POST("/api/v1/profiles", {
  body: { name: "openapi-fetch", templateId },
}));
if (created.data.status !== "idle") {
  throw new Error(`create a profile: status ${created.data.status}, want idle`);
}
const id = created.data.id;

// The launch body is optional too; openapi-typescript makes a field with a
// default (headless) required in a body, so none is sent.
const launched = answered("launch", 200, await withKey.POST("/api/v1/profiles/{id}/launch", {
  params: { path: { id } },
}));
if (!launched.data.session.cdpUrl) {
  throw new Error(`launch: no cdpUrl: ${JSON.stringify(launched)}`);
}
const running = answered("read the launched profile", 200, await withKey.GET("/api/v1/profiles/{id}", {
  params: { path: { id } },
}));
if (running.data.status !== "running" || running.data.session === null) {
  throw new Error(`read the launched profile: status ${running.data.status}, want running with a session`);
}

// Release takes no body.
const released = answered("release", 200, await withKey.POST("/api/v1/profiles/{id}/release", {
  params: { path: { id } },
}));
if (released.data.status !== "idle" || released.data.session !== null) {
  throw new Error(`release: status ${released.data.status}, want idle without a session`);
}
console.log("openapi-fetch: register, API key, create, launch, release: ok");
