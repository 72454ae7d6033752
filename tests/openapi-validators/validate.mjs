// Validates an OpenAPI document with two independent validators and prints
// one line per validator: "NAME ok" or "NAME FAIL: reasons". Exit status 0
// when both accept it, 1 when either rejects it, 2 on a usage error.
//
//   node validate.mjs docs/openapi.yaml
//
// @seriousme/openapi-schema-validator checks the document against the
// OpenAPI Initiative's published JSON Schema for its version;
// @apidevtools/swagger-parser dereferences every $ref and checks the
// document with its own rules. They share no code, so a document both
// accept is not an artefact of one implementation.
import { readFile } from "node:fs/promises";
import { Validator } from "@seriousme/openapi-schema-validator";
import SwaggerParser from "@apidevtools/swagger-parser";

const path = process.argv[2];
if (!path || process.argv.length !== 3) {
  console.error("usage: node validate.mjs OPENAPI.yaml");
  process.exit(2);
}

let failed = false;

const schemaValidator = new Validator();
const text = await readFile(path, "utf8");
const result = await schemaValidator.validate(text);
if (result.valid) {
  console.log(`openapi-schema-validator ok (OpenAPI ${schemaValidator.version})`);
} else {
  failed = true;
  console.log(`openapi-schema-validator FAIL: ${JSON.stringify(result.errors).slice(0, 4000)}`);
}

try {
  await SwaggerParser.validate(path);
  console.log("swagger-parser ok");
} catch (e) {
  failed = true;
  console.log(`swagger-parser FAIL: ${String(e.message).slice(0, 4000)}`);
}

process.exit(failed ? 1 : 0);
