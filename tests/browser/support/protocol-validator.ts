// Validates messages against shared/protocol.schema.json with ajv (JSON Schema 2020-12).
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { repoRoot } from "./paths.js";

const schema = JSON.parse(readFileSync(resolve(repoRoot, "shared/protocol.schema.json"), "utf8")) as Record<string, unknown>;
const ajv = new Ajv2020({ strict: false, allErrors: true });
const validateAny = ajv.compile(schema);
const schemaId = String(schema.$id);
const validateToHost = ajv.compile({ $ref: `${schemaId}#/$defs/ToHost` });
const validateToExtension = ajv.compile({ $ref: `${schemaId}#/$defs/ToExtension` });

function check(fn: typeof validateAny, message: unknown): string | null {
  return fn(message) ? null : ajv.errorsText(fn.errors);
}

export const protocolErrors = {
  any: (message: unknown): string | null => check(validateAny, message),
  toHost: (message: unknown): string | null => check(validateToHost, message),
  toExtension: (message: unknown): string | null => check(validateToExtension, message),
};
