// oidc-provider ships no type declarations; these are the parts Sift (mcp-auth/) and its tests use.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  interface Interaction {
    uid: string;
    returnTo: string;
    params: Record<string, unknown>;
    prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
    session?: { accountId?: string };
  }

  interface GrantInstance {
    accountId: string;
    clientId: string;
    addResourceScope(resource: string, scope: string): void;
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  interface AccessTokenInstance {
    jti: string;
    accountId: string;
    clientId: string;
    grantId: string;
    scope?: string;
    aud?: string | string[];
    isExpired: boolean;
  }

  interface ClientInstance {
    clientId: string;
    clientName?: string;
    clientUri?: string;
    redirectUris: string[];
  }

  export const errors: {
    InvalidTarget: new (description?: string) => Error;
    SessionNotFound: new (description?: string) => Error;
  };

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;
    on(event: string, listener: (...args: unknown[]) => void): this;
    // biome-ignore lint/suspicious/noExplicitAny: Koa middleware; its context is not declared here.
    use(middleware: (ctx: any, next: () => Promise<void>) => Promise<void>): this;
    proxy: boolean;
    issuer: string;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>;
    Grant: new (init: {
      accountId: string;
      clientId: string;
    }) => GrantInstance;
    AccessToken: { find(value: string): Promise<AccessTokenInstance | undefined> };
    Client: { find(id: string): Promise<ClientInstance | undefined> };
  }
  export type { Account, Interaction, AccessTokenInstance };
}
