// The client's address, for limits counted per client. Behind N trusted proxies the client is
// the N-th address from the right of X-Forwarded-For (each proxy appends the peer it saw); with
// none, only the socket's peer counts, since a client writes its own forwarded headers.
import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context } from "hono";

export function clientAddress(c: Context, trustedProxyHops: number): string | undefined {
  let peer: string | undefined;
  try {
    peer = getConnInfo(c).remote.address;
  } catch {
    // Not served by @hono/node-server (a test calling the app directly): no address to count by.
    return undefined;
  }
  if (trustedProxyHops === 0) return peer;
  const forwarded = (c.req.header("x-forwarded-for") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return forwarded[forwarded.length - trustedProxyHops] ?? forwarded[0] ?? peer;
}
