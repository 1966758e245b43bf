// HMAC-SHA256 signatures for values the server hands out and must trust when they come back
// (upload URLs, the OAuth state cookie).
import { createHmac, timingSafeEqual } from "node:crypto";

export const sign = (secret: Buffer, message: string) =>
  createHmac("sha256", secret).update(message).digest("base64url");

export function verifySignature(secret: Buffer, message: string, signature: string): boolean {
  const expected = Buffer.from(sign(secret, message));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** `payload.signature`, both base64url: tamper-evident, not secret. */
export function sealJson(secret: Buffer, value: unknown): string {
  const payload = Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${payload}.${sign(secret, payload)}`;
}

export function openJson<T>(secret: Buffer, sealed: string | undefined): T | undefined {
  const [payload, signature] = (sealed ?? "").split(".");
  if (!payload || !signature || !verifySignature(secret, payload, signature)) return undefined;
  try {
    return JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as T;
  } catch {
    return undefined;
  }
}
