// Writes src/schema.d.ts, the types of every body engram answers or takes, from its
// OpenAPI document: `node scripts/generate.mjs <openapi.json file or URL>`. With
// `--check` it writes nothing and fails if the file differs, which is how the tests
// keep the types from drifting from the server.

import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const OUT = fileURLToPath(new URL("../src/schema.d.ts", import.meta.url));

/** The TypeScript type of a JSON schema. */
export function typeOf(schema) {
  if (!schema || Object.keys(schema).length === 0) return "unknown";
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(" | ");
  if (schema.oneOf || schema.anyOf) return union((schema.oneOf ?? schema.anyOf).map(typeOf));
  if (schema.allOf) return schema.allOf.length === 1 ? typeOf(schema.allOf[0]) : schema.allOf.map(typeOf).join(" & ");
  const kinds = Array.isArray(schema.type) ? schema.type : [schema.type];
  return union(kinds.map((kind) => one(kind, schema)));
}

function one(kind, schema) {
  switch (kind) {
    case "string":
      return "string";
    case "integer":
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return `Array<${typeOf(schema.items)}>`;
    case "object":
      if (schema.properties) return `{ ${fields(schema).join(" ")} }`;
      return "Record<string, unknown>";
    default:
      return "unknown";
  }
}

function union(types) {
  return [...new Set(types)].join(" | ");
}

function fields(schema) {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const optional = required.has(name) ? "" : "?";
    return `${name}${optional}: ${typeOf(property)};`;
  });
}

function comment(text, indent) {
  if (!text) return [];
  const lines = text.trim().split("\n");
  return [`${indent}/**`, ...lines.map((line) => `${indent} * ${line}`.trimEnd()), `${indent} */`];
}

/** The whole file for an OpenAPI document. */
export function render(document) {
  const schemas = document.components?.schemas ?? {};
  const out = [
    "// The bodies engram takes and answers, generated from its /openapi.json by",
    "// scripts/generate.mjs; do not edit by hand.",
    "",
  ];
  for (const name of Object.keys(schemas).sort()) {
    const schema = schemas[name];
    out.push(...comment(schema.description, ""));
    if (schema.properties && !schema.allOf) {
      const required = new Set(schema.required ?? []);
      out.push(`export interface ${name} {`);
      for (const [field, property] of Object.entries(schema.properties)) {
        out.push(...comment(property.description, "  "));
        out.push(`  ${field}${required.has(field) ? "" : "?"}: ${typeOf(property)};`);
      }
      out.push("}", "");
    } else {
      out.push(`export type ${name} = ${typeOf(schema)};`, "");
    }
  }
  return out.join("\n");
}

async function load(source) {
  if (/^https?:/.test(source)) {
    const response = await fetch(source);
    if (!response.ok) throw new Error(`${source}: HTTP ${response.status}`);
    return response.json();
  }
  return JSON.parse(await readFile(source, "utf8"));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [source, flag] = process.argv.slice(2);
  if (!source) {
    console.error("usage: node scripts/generate.mjs <openapi.json file or URL> [--check]");
    process.exit(2);
  }
  const text = render(await load(source));
  if (flag === "--check") {
    const current = await readFile(OUT, "utf8").catch(() => "");
    if (current !== text) {
      console.error("src/schema.d.ts differs from the server's OpenAPI document: run scripts/generate.mjs");
      process.exit(1);
    }
  } else {
    await writeFile(OUT, text);
  }
}
