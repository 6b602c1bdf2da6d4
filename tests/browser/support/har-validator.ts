// Validates HAR files against the HAR 1.2 JSON schema (the har-schema package, draft-06) with ajv, plus the spec's
// rules the schema leaves out (its "min" keyword is not JSON Schema): non-negative phases, -1 only for the optional
// ones, and `time` = the sum of the phases (ssl is inside connect).
import { createRequire } from "node:module";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";

const require = createRequire(import.meta.url);
const harSchemas = require("har-schema") as Record<string, { $id: string }>;
const draft06 = require("ajv/dist/refs/json-schema-draft-06.json") as object;

const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addMetaSchema(draft06);
addFormats.default(ajv);
for (const schema of Object.values(harSchemas)) ajv.addSchema(schema);
const validateHar = ajv.getSchema("har.json#");
if (!validateHar) throw new Error("har-schema: har.json# missing");

interface Timings { blocked: number; dns: number; connect: number; ssl: number; send: number; wait: number; receive: number }

export function harErrors(har: unknown): string[] {
  const errors: string[] = [];
  if (!validateHar?.(har)) errors.push(ajv.errorsText(validateHar?.errors));
  const entries = (har as { log?: { entries?: { time: number; timings: Timings; request: { url: string } }[] } }).log?.entries ?? [];
  for (const e of entries) {
    const t = e.timings;
    for (const key of ["send", "wait", "receive"] as const) if (!(t[key] >= 0)) errors.push(`${e.request.url}: ${key} ${t[key]}`);
    for (const key of ["blocked", "dns", "connect", "ssl"] as const) {
      if (!(t[key] >= 0 || t[key] === -1)) errors.push(`${e.request.url}: ${key} ${t[key]}`);
    }
    if (t.ssl > 0 && !(t.connect >= t.ssl)) errors.push(`${e.request.url}: ssl ${t.ssl} not inside connect ${t.connect}`);
    const sum = [t.blocked, t.dns, t.connect, t.send, t.wait, t.receive].reduce((a, b) => a + Math.max(b, 0), 0);
    if (Math.abs(sum - e.time) > 0.01) errors.push(`${e.request.url}: time ${e.time} ≠ sum of timings ${sum}`);
  }
  return errors;
}
