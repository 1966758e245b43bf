import type { Principal } from "../auth/principal.ts";
import type { Logger } from "../log.ts";

/** Per-request values set by middleware. */
export type AppEnv = {
  Variables: {
    requestId: string;
    log: Logger;
    principal: Principal;
  };
};
