import { authorize } from "../auth/authority.ts";
import type { Config } from "../config.ts";
import { clientAddress } from "../http/client-address.ts";
import type { Handlers, ResponseBody } from "../http/contract.ts";
import type { AccountService } from "../services/accounts.ts";
import { clearSessionCookie, setSessionCookie } from "./session-cookie.ts";

export function authHandlers(
  accounts: AccountService,
  config: Pick<Config, "trustedProxyHops" | "sessionCookieDomain">,
): Handlers {
  return {
    Auth_signup: async (c, { body }) => {
      const signedIn = await accounts.signup(body);
      setSessionCookie(c, signedIn.token, signedIn.expiresAt, config.sessionCookieDomain);
      return c.json(signedIn.me satisfies ResponseBody<"Auth_signup", 201>, 201);
    },
    Auth_login: async (c, { body }) => {
      const signedIn = await accounts.login(body, clientAddress(c, config.trustedProxyHops));
      setSessionCookie(c, signedIn.token, signedIn.expiresAt, config.sessionCookieDomain);
      return c.json(signedIn.me satisfies ResponseBody<"Auth_login", 200>);
    },
    Auth_logout: async (c) => {
      const p = c.get("principal");
      authorize(p, "apiKeys");
      if (p.kind === "session") await accounts.logout(p.tokenHash);
      clearSessionCookie(c, config.sessionCookieDomain);
      return c.body(null, 204);
    },
    Auth_me: async (c) => {
      const p = c.get("principal");
      authorize(p, "apiKeys");
      if (p.kind !== "session") throw new Error("unreachable: only sessions may read /me");
      return c.json((await accounts.me(p.userId)) satisfies ResponseBody<"Auth_me", 200>);
    },
  };
}
