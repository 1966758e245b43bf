// SIFT_NATS_URL's servers as the NATS client takes them, and as a log line may show them.
import type { ConnectionOptions } from "@nats-io/transport-node";

/**
 * The servers of SIFT_NATS_URL as the client takes them: the NATS client ignores credentials in a
 * URL (a server that requires them answers "Authorization Violation"), so `nats://user:password@`
 * becomes its user and password, and `nats://token@` its token (the first URL that has any).
 */
export function serversOf(urls: string[]): Pick<ConnectionOptions, "servers" | "user" | "pass" | "token"> {
  let auth: Pick<ConnectionOptions, "user" | "pass" | "token"> = {};
  const servers = urls.map((raw) => {
    const url = new URL(raw);
    if (url.username && !("user" in auth || "token" in auth)) {
      const name = decodeURIComponent(url.username);
      auth = url.password ? { user: name, pass: decodeURIComponent(url.password) } : { token: name };
    }
    url.username = "";
    url.password = "";
    return url.toString().replace(/\/$/, "");
  });
  return { servers, ...auth };
}

/** The servers for a log line: without their credentials. */
export function serversShown(urls: string[]): string {
  return ([] as string[]).concat(serversOf(urls).servers ?? []).join(",");
}
