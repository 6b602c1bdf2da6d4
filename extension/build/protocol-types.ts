// Generates extension/src/generated/protocol.ts from shared/protocol.schema.json (the one definition of the protocol).
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { compile, type JSONSchema } from "json-schema-to-typescript";

type SchemaNode = Record<string, unknown>;

/** json-schema-to-typescript reads draft-07 tuples: rewrite 2020-12 `prefixItems` into `items: [...]` form. */
function toDraft07Tuples(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toDraft07Tuples);
  if (node === null || typeof node !== "object") return node;
  const out: SchemaNode = {};
  for (const [key, value] of Object.entries(node as SchemaNode)) out[key] = toDraft07Tuples(value);
  if (Array.isArray(out.prefixItems)) {
    out.items = out.prefixItems;
    out.additionalItems = false;
    delete out.prefixItems;
  }
  return out;
}

export async function generateProtocolTypes(schemaPath: string, outFile: string): Promise<void> {
  const schema = JSON.parse(await readFile(schemaPath, "utf8")) as SchemaNode;
  const ts = await compile(toDraft07Tuples(schema) as JSONSchema, "LanefetchProtocol", {
    bannerComment: `// GENERATED from ${schemaPath.replace(/^.*\/shared\//, "shared/")} by extension/build/protocol-types.ts. Do not edit.`,
    additionalProperties: false,
    unreachableDefinitions: true,
    strictIndexSignatures: true,
  });
  await mkdir(dirname(outFile), { recursive: true });
  await writeFile(outFile, ts);
}
