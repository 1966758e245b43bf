// Values shaped by the contract's JSON Schemas (generated/openapi.json), as fast-check arbitraries,
// and the mutations that turn a valid value into the mistakes and attacks a client sends.
import fc from "fast-check";

export type Schema = Record<string, any>;
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Follows `$ref`s into `components.schemas`. */
export function resolver(document: Schema): (schema: Schema) => Schema {
  return (schema) => {
    let current = schema;
    while (typeof current.$ref === "string") {
      const name = current.$ref.split("/").pop()!;
      // A $ref with siblings (a description, a default) keeps them; the referenced schema decides.
      current = document.components.schemas[name];
    }
    return current;
  };
}

/** Strings that make parsers, stores and encoders stumble; valid UTF-16 or not. */
export const HOSTILE_STRINGS: readonly string[] = [
  "",
  " ",
  ".",
  "..",
  "...",
  "%",
  "%00",
  "%2F",
  "a/b",
  "a\\b",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "a\udfffb",
  "\ud83d",
  "\ufffe",
  "\uffff",
  "\u202e\u0645",
  "\u200b",
  "e\u0301",
  "İı",
  "ß",
  "😀🏳️‍🌈",
  "\t\r\n",
  "' OR 1=1 --",
  '"; DROP TABLE records; --',
  "$" + "{jndi:ldap://x}",
  "<script>alert(1)</script>",
  "null",
  "undefined",
  "NaN",
  "-1",
  "0",
  "1e309",
  "9007199254740993",
  "-9223372036854775809",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "a".repeat(129),
  "b".repeat(513),
  "c".repeat(4097),
];

/** Any UTF-16 code unit, so lone surrogates and noncharacters come up too. */
export const anyCodeUnitString = (maxLength = 24) =>
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)), maxLength });

export const hostileString = (): fc.Arbitrary<string> =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...HOSTILE_STRINGS), weight: 4 },
    { arbitrary: anyCodeUnitString(), weight: 2 },
    { arbitrary: fc.string({ unit: "grapheme", maxLength: 24 }), weight: 2 },
    { arbitrary: fc.string({ maxLength: 24 }), weight: 2 },
  );

/** Values of the wrong type for whatever a schema asks for. */
export const anyJson = (): fc.Arbitrary<Json> =>
  fc.oneof(
    fc.constantFrom<Json>(null, true, false, 0, -1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 2, "", [], {}),
    fc.integer().map((n) => n as Json),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => n as Json),
    hostileString().map((s) => s as Json),
    fc.jsonValue({ maxDepth: 3 }).map((v) => v as Json),
  );

interface Options {
  /** Values from the running tenant (index names, record ids) for strings of a given pattern. */
  known?: (schema: Schema, name: string | undefined) => string[] | undefined;
}

/** A value that satisfies `schema` (within what a generator reasonably can). */
export function valueFor(
  document: Schema,
  schema: Schema,
  options: Options = {},
  depth = 0,
  name?: string,
): fc.Arbitrary<Json> {
  const resolve = resolver(document);
  const s = resolve(schema);
  if (s.const !== undefined) return fc.constant(s.const as Json);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as Json[]));
  const branches = s.anyOf ?? s.oneOf;
  if (Array.isArray(branches))
    return fc.oneof(...branches.map((b: Schema) => valueFor(document, b, options, depth + 1)));
  switch (s.type) {
    case "object": {
      const properties: Record<string, Schema> = s.properties ?? {};
      const required = new Set<string>(s.required ?? []);
      const fields: Record<string, fc.Arbitrary<Json>> = {};
      for (const [key, sub] of Object.entries(properties))
        fields[key] = valueFor(document, sub, options, depth + 1, key);
      const record = fc.record(fields, { requiredKeys: [...required] }) as fc.Arbitrary<{ [key: string]: Json }>;
      const open = s.unevaluatedProperties ?? s.additionalProperties;
      if (!open || depth > 3) return record;
      // An open object (a record's `data`): fields of every JSON type, nested a little.
      return fc
        .tuple(record, fc.dictionary(fc.string({ maxLength: 12 }), anyJson(), { maxKeys: 4 }))
        .map(([known, extra]) => ({ ...extra, ...known }));
    }
    case "array": {
      const items = s.items ? valueFor(document, s.items, options, depth + 1) : anyJson();
      return fc.array(items, { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) });
    }
    case "integer":
      return fc.integer({
        min: Math.max(s.minimum ?? -(2 ** 31), -(2 ** 31)),
        max: Math.min(s.maximum ?? 2 ** 31 - 1, 2 ** 31 - 1),
      });
    case "number":
      return fc.double({
        min: s.minimum ?? -1e9,
        max: s.maximum ?? 1e9,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "boolean":
      return fc.boolean();
    case "string": {
      const known = options.known?.(s, name);
      const own = stringFor(s);
      return known?.length ? fc.oneof(fc.constantFrom(...known), own) : own;
    }
    default:
      return anyJson();
  }
}

function stringFor(s: Schema): fc.Arbitrary<string> {
  const maxLength = Math.min(s.maxLength ?? 40, 40);
  const minLength = Math.min(s.minLength ?? 0, maxLength);
  if (typeof s.pattern === "string") {
    return fc
      .stringMatching(new RegExp(s.pattern))
      .filter((v) => v.length >= minLength && v.length <= (s.maxLength ?? Infinity));
  }
  if (s.format === "email") return fc.emailAddress().filter((v) => v.length <= (s.maxLength ?? 254));
  if (s.format === "uri") return fc.webUrl();
  return fc.string({ minLength, maxLength });
}

/** Where in a JSON value something can be changed: a list of keys and indexes from the root. */
type Path = (string | number)[];

function paths(value: Json, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) paths(v, [...at, i], out);
  } else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) paths(v, [...at, k], out);
  return out;
}

function clone(value: Json): Json {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as Json);
}

/** Sets a property even when its name is `__proto__`, which assignment would not create. */
function setOwn(target: Record<string, Json> | Json[], key: string | number, value: Json) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function replaceAt(root: Json, path: Path, make: (old: Json) => Json | undefined): Json {
  if (path.length === 0) return make(root) ?? null;
  const copy = clone(root);
  let parent = copy as Record<string, Json> | Json[];
  for (const key of path.slice(0, -1)) parent = (parent as Record<string, Json>)[key as string] as Record<string, Json>;
  const last = path[path.length - 1]!;
  const next = make((parent as Record<string, Json>)[last as string]!);
  if (next === undefined) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last as string];
  } else setOwn(parent, last, next);
  return copy;
}

/** A JSON body as sent: text, so that invalid JSON and nesting beyond JSON.stringify fit too. */
export type BodyText = string;

const pick = <T>(items: T[]) => fc.nat({ max: Math.max(0, items.length - 1) }).map((i) => items[i]!);

/**
 * The mutations of a valid value: wrong types, missing required fields, extra fields (prototype
 * names too), deep nesting, strings as long as the body limit allows, and text that is not JSON.
 */
export function mutatedBody(valid: fc.Arbitrary<Json>, maxBodyBytes: number): fc.Arbitrary<BodyText> {
  const asText = (v: Json) => JSON.stringify(v) ?? "null";
  const wrongType = valid.chain((v) =>
    fc.tuple(pick(paths(v)), anyJson()).map(([path, other]) => asText(replaceAt(v, path, () => other))),
  );
  const dropped = valid.chain((v) => {
    const keyed = paths(v).filter((p) => p.length > 0);
    return keyed.length
      ? pick(keyed).map((path) => asText(replaceAt(v, path, () => undefined)))
      : fc.constant(asText(v));
  });
  const extra = valid.chain((v) => {
    const objects = paths(v).filter((p) => {
      let node: Json = v;
      for (const k of p) node = (node as Record<string, Json>)[k as string]!;
      return node !== null && typeof node === "object" && !Array.isArray(node);
    });
    return fc
      .tuple(
        objects.length ? pick(objects) : fc.constant<Path>([]),
        fc.oneof(
          fc.constantFrom("__proto__", "constructor", "prototype", "id", "", "title "),
          fc.string({ maxLength: 10 }),
        ),
        anyJson(),
      )
      .map(([path, key, value]) =>
        asText(
          replaceAt(v, path, (old) => {
            if (old === null || typeof old !== "object" || Array.isArray(old)) return old;
            const copy = clone(old) as Record<string, Json>;
            setOwn(copy, key, value);
            return copy;
          }),
        ),
      );
  });
  // Nesting is written as text: depth in the thousands is what a parser must survive.
  const nested = fc
    .tuple(valid, fc.constantFrom(20, 200, 5_000, 50_000), fc.constantFrom("[", '{"a":'))
    .map(([v, depth, open]) => {
      const close = open === "[" ? "]" : "}";
      const inner = asText(v);
      return depth * 6 + inner.length < maxBodyBytes
        ? `${open.repeat(depth)}${inner}${close.repeat(depth)}`
        : `${open.repeat(depth)}null${close.repeat(depth)}`;
    });
  const huge = valid.chain((v) => {
    const strings = paths(v).filter((p) => {
      let node: Json = v;
      for (const k of p) node = (node as Record<string, Json>)[k as string]!;
      return typeof node === "string";
    });
    return fc
      .tuple(
        strings.length ? pick(strings) : fc.constant<Path>([]),
        fc.constantFrom(5_000, 70_000, Math.floor(maxBodyBytes * 0.9)),
        fc.constantFrom("a", "é", "\u0000", "😀", " "),
      )
      .map(([path, length, char]) => {
        const text = char.repeat(Math.max(1, Math.floor(length / JSON.stringify(char).length)));
        return asText(replaceAt(v, path, () => text));
      });
  });
  const notJson = fc.oneof(
    valid.chain((v) => {
      const text = asText(v);
      return fc.nat({ max: text.length }).map((n) => text.slice(0, n));
    }),
    valid.map((v) => `\ufeff${asText(v)}`),
    valid.map((v) => `${asText(v)} trailing`),
    valid.map((v) => asText(v).replace(/"/g, "'")),
    fc.constantFrom(
      "{",
      "}",
      "[",
      "nul",
      "NaN",
      "Infinity",
      "-",
      '"\\ud800"',
      '{"title":"\\u0000"}',
      '{"title":"\\udfff"}',
      '{"a":1,"a":2}',
      '{"__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
      "1".repeat(400),
      `{"a":${"9".repeat(400)}}`,
      "\u0000",
      "\r\n",
    ),
  );
  return fc.oneof(
    { arbitrary: valid.map(asText), weight: 6 },
    { arbitrary: wrongType, weight: 4 },
    { arbitrary: dropped, weight: 3 },
    { arbitrary: extra, weight: 3 },
    { arbitrary: nested, weight: 1 },
    { arbitrary: huge, weight: 1 },
    { arbitrary: notJson, weight: 3 },
  );
}
