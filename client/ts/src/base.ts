// Base: the transport and the JSON round trip that every group of client
// calls stands on (see client.ts).
import { protocolError } from "./errors.js";
import { Transport, type ClientOptions, type Request } from "./transport.js";

export class Base {
  protected readonly t: Transport;

  constructor(options: ClientOptions = {}) {
    this.t = new Transport(options);
  }

  /** Use a re-minted token from now on. */
  setToken(token: string | undefined): void {
    this.t.token = token;
  }

  /** Closes pooled connections. */
  close(): void {
    this.t.close();
  }

  protected async json<T>(method: string, path: string, body: unknown, idempotent: boolean,
                        extraWaitMs = 0, headers: Record<string, string> = {}): Promise<T> {
    const req: Request = { method, path, idempotent, extraWaitMs, headers: { ...headers } };
    if (body !== undefined) {
      req.body = Buffer.from(JSON.stringify(body));
      req.headers!["Content-Type"] = "application/json";
    }
    const a = await this.t.call(req);
    try {
      return JSON.parse(a.body.toString("utf8")) as T;
    } catch (e) {
      throw protocolError(`the daemon's answer is not JSON: ${(e as Error).message}`);
    }
  }
}
