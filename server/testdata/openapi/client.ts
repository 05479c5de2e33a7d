// A typed client of the spool API, from types that openapi-typescript
// generates from server/openapi.json (see the README). TestOpenAPIClient
// generates them, type-checks this file with tsc --strict and runs it
// against a server.
import createClient from "openapi-fetch";
import type { paths } from "./spool-api.js";

const [baseUrl, key] = process.argv.slice(2);
const spool = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${key}` } });

const turn = await spool.POST("/invoke", { body: { prompt: "hello", sessionId: "ts-client" } });
if (turn.error) throw new Error(turn.error.error.message);
console.log(`answer: ${turn.data.text} (${turn.data.status}, ${turn.data.usage.outputTokens} tokens)`);

const page = await spool.GET("/v1/sessions", { params: { query: { limit: 10 } } });
console.log(`sessions: ${page.data?.sessions.map((s) => s.id).join(",")}`);

const missing = await spool.GET("/v1/sessions/{id}", { params: { path: { id: "no-such-session" } } });
console.log(`missing: ${missing.response.status} ${missing.error?.error.code}`);
