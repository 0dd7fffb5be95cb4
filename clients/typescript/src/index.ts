/**
 * The Vitals API's typed client: `openapi-fetch` over the types `openapi-typescript`
 * generated from `docs/openapi.json` (`src/schema.d.ts`, never edited by hand), with the
 * session a phone keeps (access and refresh token) and the API's error shape as an
 * exception.
 *
 * Every request and answer is typed by the OpenAPI document: `vitals.api.GET(
 * "/v1/me/dashboard", ...)` only compiles with that path's parameters, and its `data` is
 * a `DashboardView`. The session methods wrap the four calls that change it.
 */
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths };

/** The document's schemas by name: `Schemas["MealView"]`, `Schemas["DashboardView"]`. */
export type Schemas = components["schemas"];

/** An answer outside 2xx, with the API's error code and message when it sent them. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(`${status} ${code}: ${detail}`);
    this.name = "ApiError";
  }
}

/** A signed-in session, as `register`, `login` and `refresh` answer it. */
export interface Session {
  userId: string;
  accessToken: string;
  refreshToken: string;
}

/** What an `openapi-fetch` call resolves to, whatever the operation. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * The answer's data when it is a 2xx, else an {@link ApiError} built from the API's
 * error shape (`{"error": {"code", "message"}}`), or from the status alone.
 */
export function ok<T>(answer: Answer<T>): T {
  if (answer.response.ok) {
    // A 2xx with no body (204, 202 without content) has no data: `undefined` is
    // what the operation's type says then.
    return answer.data as T;
  }
  throw errorOf(answer.response.status, answer.error);
}

/** The API's error shape of a refused answer, as an {@link ApiError}. */
export function errorOf(status: number, body: unknown): ApiError {
  const detail = (body as Partial<Schemas["ErrorBody"]> | undefined)?.error;
  if (detail && typeof detail.code === "string") {
    return new ApiError(status, detail.code, String(detail.message ?? ""));
  }
  return new ApiError(status, "http_" + status, "the API answered without its error shape");
}

export interface VitalsOptions {
  /** Where the API is, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** A `fetch` of the caller's (tests, instrumentation); the global one by default. */
  fetch?: typeof globalThis.fetch;
  /** Called whenever the session changes (to keep it in the phone's keychain). */
  onSession?: (session: Session | null) => void;
}

/** One user's connection to the API: the typed calls and the session they carry. */
export class Vitals {
  /** Every operation of the document, typed (`GET`, `POST`, `PUT`, `PATCH`, `DELETE`). */
  readonly api: Client<paths>;
  private current: Session | null = null;
  /** The refresh under way, shared by every caller that needs one meanwhile. */
  private refreshing: Promise<Session> | null = null;

  constructor(private readonly options: VitalsOptions) {
    const fetchImpl = options.fetch;
    this.api = createClient<paths>({
      baseUrl: options.baseUrl,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });
    const bearer: Middleware = {
      onRequest: ({ request }) => {
        // A call that names its own Authorization (none, or another's) keeps it.
        if (this.current && !request.headers.has("Authorization")) {
          request.headers.set("Authorization", `Bearer ${this.current.accessToken}`);
        }
        return request;
      },
    };
    this.api.use(bearer);
  }

  /** The session requests are sent with, if signed in. */
  get session(): Session | null {
    return this.current;
  }

  /** Resumes a session kept from before (the phone's keychain). */
  resume(session: Session | null): void {
    this.setSession(session);
  }

  /** Creates an account and signs it in. */
  async register(body: Schemas["RegisterBody"]): Promise<Session> {
    return this.signedIn(ok(await this.api.POST("/v1/auth/register", { body })));
  }

  /** Signs in with email and password. */
  async login(email: string, password: string): Promise<Session> {
    const body = { email, password };
    return this.signedIn(ok(await this.api.POST("/v1/auth/login", { body })));
  }

  /** Exchanges the refresh token (once) for a new pair. */
  async refresh(): Promise<Session> {
    const refresh_token = this.requireSession().refreshToken;
    const body = { refresh_token };
    return this.signedIn(ok(await this.api.POST("/v1/auth/refresh", { body })));
  }

  /** Ends the session's refresh token and forgets the session. */
  async logout(): Promise<void> {
    const refresh_token = this.requireSession().refreshToken;
    ok(await this.api.POST("/v1/auth/logout", { body: { refresh_token } }));
    this.setSession(null);
  }

  /**
   * Runs `call`; when the API answers 401 to the access token `call` was sent with (it
   * expired), exchanges the refresh token and runs `call` again. Callers that meet the
   * expiry at the same moment share one exchange: a refresh token exchanges once, so a
   * second exchange of it would be refused and sign the user out. A refused exchange
   * ends the session.
   */
  async authorized<T>(call: () => Promise<T>): Promise<T> {
    const sent = this.current?.accessToken;
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 401 || !this.current) {
        throw error;
      }
      // Another caller may have refreshed since `call` was sent: then just send again.
      if (this.current.accessToken === sent) {
        try {
          await this.refreshOnce();
        } catch (refused) {
          this.setSession(null);
          throw refused;
        }
      }
      return call();
    }
  }

  /** One exchange of the refresh token, however many callers ask meanwhile. */
  private refreshOnce(): Promise<Session> {
    this.refreshing ??= this.refresh().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private requireSession(): Session {
    if (!this.current) {
      throw new ApiError(401, "signed_out", "no session: sign in first");
    }
    return this.current;
  }

  private signedIn(reply: Schemas["TokenReply"]): Session {
    const session = {
      userId: reply.user_id,
      accessToken: reply.access_token,
      refreshToken: reply.refresh_token,
    };
    this.setSession(session);
    return session;
  }

  private setSession(session: Session | null): void {
    this.current = session;
    this.options.onSession?.(session);
  }
}

/**
 * Asks `probe` until it returns something other than `undefined`, every `everyMs`,
 * failing after `withinMs`: the read models are eventually consistent, and over HTTP
 * asking again is the only way to see a projection land.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  withinMs = 30_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) {
      return found;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within ${withinMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
