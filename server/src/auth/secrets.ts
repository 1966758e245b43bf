// Random identifiers, API keys and password hashing. Keys are stored only as SHA-256 (enough for
// 238 bits of entropy); passwords use scrypt, Node's built-in memory-hard KDF, with a per-user salt.
import { createHash, randomBytes, randomInt, scrypt, timingSafeEqual } from "node:crypto";
import type { components } from "@sift/contract";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function base62(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

export const newId = (prefix: string) => `${prefix}_${base62(16)}`;

/** The contract's key types: `pat`, `svc`, `adm`, `srh`. */
export type KeyType = components["schemas"]["ApiKeyType"];
export const KEY_SECRET_LENGTH = 40;
export const DISPLAY_PREFIX_LENGTH = 16;

/** `sk-sift-<type>-…` for secret keys, `pk-sift-srh-…` for the public search key. */
export function generateApiKey(type: KeyType): string {
  return `${type === "srh" ? "pk" : "sk"}-sift-${type}-${base62(KEY_SECRET_LENGTH)}`;
}

const KEY_SHAPE = /^(sk-sift-(pat|svc|adm)|pk-sift-srh)-[0-9A-Za-z]{32,128}$/;
export const looksLikeApiKey = (value: string) => KEY_SHAPE.test(value);

export const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

export function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export const newSessionToken = () => randomBytes(32).toString("base64url");

// N = 2^15, r = 8 uses 32 MiB per hash: about 50-100 ms here, the OWASP-recommended floor.
const SCRYPT = { N: 32768, r: 8, p: 1, keylen: 32, maxmem: 64 * 1024 * 1024 } as const;

function scryptAsync(password: string, salt: Buffer, params: { N: number; r: number; p: number }, keylen: number) {
  return new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize("NFKC"), salt, keylen, { ...params, maxmem: SCRYPT.maxmem }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, SCRYPT, SCRYPT.keylen);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString("base64")}$${hash.toString("base64")}`;
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  // An unknown user still pays for one hash, so response time does not reveal which e-mails exist.
  const [scheme, n, r, p, salt, hash] = (stored ?? DUMMY_HASH).split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64");
  const actual = await scryptAsync(
    password,
    Buffer.from(salt, "base64"),
    { N: Number(n), r: Number(r), p: Number(p) },
    expected.length,
  );
  return stored !== null && timingSafeEqual(actual, expected);
}

const DUMMY_HASH = `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${Buffer.alloc(16).toString("base64")}$${Buffer.alloc(32).toString("base64")}`;
