// A small HTTP client for tests: JSON in and out, an optional Bearer key, and a cookie jar for
// dashboard sessions (fetch keeps no cookies of its own).
export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export class Http {
  readonly base: string;
  private cookies = new Map<string, string>();

  constructor(base: string) {
    this.base = base;
  }

  /** A copy sharing nothing: another browser. */
  fresh(): Http {
    return new Http(this.base);
  }

  get sessionCookie(): string | undefined {
    return this.cookies.get("sift_session");
  }

  async request<T = any>(
    method: string,
    path: string,
    options: { json?: unknown; body?: BodyInit; key?: string; headers?: Record<string, string>; cookies?: boolean } = {},
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    if (options.json !== undefined) headers["content-type"] ??= "application/json";
    if (options.cookies !== false && this.cookies.size) {
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    }
    const response = await fetch(this.base + path, {
      method,
      headers,
      body: options.json !== undefined ? JSON.stringify(options.json) : options.body,
      redirect: "manual",
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const [name, ...rest] = pair!.split("=");
      const value = rest.join("=");
      const expired = attrs.some((a) => /max-age=0/i.test(a.trim())) || value === "";
      if (expired) this.cookies.delete(name!.trim());
      else this.cookies.set(name!.trim(), value);
    }
    const text = await response.text();
    let body: any = text;
    if (/json/.test(response.headers.get("content-type") ?? "")) body = text ? JSON.parse(text) : undefined;
    return { status: response.status, headers: response.headers, body, text };
  }

  get = <T = any>(path: string, options?: Parameters<Http["request"]>[2]) => this.request<T>("GET", path, options);
  post = <T = any>(path: string, json?: unknown, options?: Parameters<Http["request"]>[2]) =>
    this.request<T>("POST", path, { ...options, json });
  put = <T = any>(path: string, json?: unknown, options?: Parameters<Http["request"]>[2]) =>
    this.request<T>("PUT", path, { ...options, json });
  patch = <T = any>(path: string, json?: unknown, options?: Parameters<Http["request"]>[2]) =>
    this.request<T>("PATCH", path, { ...options, json });
  delete = <T = any>(path: string, options?: Parameters<Http["request"]>[2]) => this.request<T>("DELETE", path, options);
}
